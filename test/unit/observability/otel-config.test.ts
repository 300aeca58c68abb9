/**
 * Tracing settings from the standard OTEL_* variables (src/observability/otel-config.ts): off
 * unless an exporter is asked for, the spec's defaults and precedence (a traces-specific
 * variable over the general one), and every unusable value reported with its variable's name.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tracingConfigFromEnv, tracingProblemsMessage, type TracingConfig, type TracingSettings } from '../../../src/observability/otel-config.ts';

const settingsOf = (config: TracingConfig): TracingSettings => {
  assert.equal(config.enabled, true, JSON.stringify(config));
  return (config as { settings: TracingSettings }).settings;
};
const problemsOf = (config: TracingConfig) => {
  assert.equal(config.enabled, 'invalid', JSON.stringify(config));
  return (config as { problems: readonly { variable: string; error: string }[] }).problems;
};

test('off without an exporter or endpoint, with OTEL_TRACES_EXPORTER=none and with OTEL_SDK_DISABLED=true', () => {
  assert.deepEqual(tracingConfigFromEnv({}, 'svc'), { enabled: false });
  assert.deepEqual(
    tracingConfigFromEnv({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'whatever' }, 'svc'),
    { enabled: false },
    'nothing else turns it on (nor is read)',
  );
  assert.deepEqual(tracingConfigFromEnv({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }, 'svc'), { enabled: false });
  assert.deepEqual(tracingConfigFromEnv({ OTEL_SDK_DISABLED: 'TRUE', OTEL_TRACES_EXPORTER: 'otlp' }, 'svc'), { enabled: false });
});

test('an endpoint turns OTLP on with the spec defaults', () => {
  const s = settingsOf(tracingConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }, 'operless-forwarder'));
  assert.deepEqual(s.exporters, ['otlp']);
  assert.equal(s.otlpUrl, 'http://collector:4318/v1/traces', 'the general endpoint gets the signal path');
  assert.equal(s.protocol, 'http/protobuf');
  assert.equal(s.serviceName, 'operless-forwarder');
  assert.equal(s.sampler, 'parentbased_always_on');
  assert.equal(s.exportTimeoutMs, 10_000);
  assert.equal(s.scheduleDelayMs, 5000);
  const d = settingsOf(tracingConfigFromEnv({ OTEL_TRACES_EXPORTER: 'otlp' }, 'svc'));
  assert.equal(d.otlpUrl, 'http://localhost:4318/v1/traces', 'the spec default endpoint');
});

test('traces-specific variables win; the traces endpoint is used as is', () => {
  const s = settingsOf(
    tracingConfigFromEnv(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://general:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/custom',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_HEADERS: 'a=1,b=2',
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'b=3,api-key=x%20y',
        OTEL_EXPORTER_OTLP_TIMEOUT: '3000',
        OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '1500',
        OTEL_SERVICE_NAME: 'mine',
        OTEL_RESOURCE_ATTRIBUTES: 'service.name=ignored,deployment.environment=dev',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
        OTEL_TRACES_EXPORTER: 'otlp,console',
      },
      'svc',
    ),
  );
  assert.equal(s.otlpUrl, 'https://traces.example/custom');
  assert.equal(s.protocol, 'http/json');
  assert.deepEqual(s.headers, { a: '1', b: '3', 'api-key': 'x y' });
  assert.equal(s.exportTimeoutMs, 1500);
  assert.equal(s.serviceName, 'mine');
  assert.equal(s.resourceAttributes['deployment.environment'], 'dev');
  assert.equal(s.sampler, 'parentbased_traceidratio');
  assert.equal(s.samplerRatio, 0.25);
  assert.deepEqual(s.exporters, ['otlp', 'console']);
  assert.equal(
    settingsOf(tracingConfigFromEnv({ OTEL_TRACES_EXPORTER: 'console', OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-resource' }, 'svc')).serviceName,
    'from-resource',
  );
});

test('every unusable value is reported, naming its variable and what it accepts', () => {
  const problems = problemsOf(
    tracingConfigFromEnv(
      {
        OTEL_TRACES_EXPORTER: 'otlp,zipkin',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_EXPORTER_OTLP_HEADERS: 'novalue',
        OTEL_EXPORTER_OTLP_TIMEOUT: '10s',
        OTEL_TRACES_SAMPLER: 'xray',
        OTEL_BSP_SCHEDULE_DELAY: '-1',
        OTEL_SDK_DISABLED: 'maybe',
      },
      'svc',
    ),
  );
  const byVariable = Object.fromEntries(problems.map((p) => [p.variable, p.error]));
  assert.deepEqual(Object.keys(byVariable).sort(), [
    'OTEL_BSP_SCHEDULE_DELAY',
    'OTEL_EXPORTER_OTLP_ENDPOINT',
    'OTEL_EXPORTER_OTLP_HEADERS',
    'OTEL_EXPORTER_OTLP_PROTOCOL',
    'OTEL_EXPORTER_OTLP_TIMEOUT',
    'OTEL_SDK_DISABLED',
    'OTEL_TRACES_EXPORTER',
    'OTEL_TRACES_SAMPLER',
  ]);
  assert.match(byVariable.OTEL_TRACES_EXPORTER!, /"zipkin" is not an exporter Operless ships \(otlp, console, none\)/);
  assert.match(byVariable.OTEL_EXPORTER_OTLP_PROTOCOL!, /gRPC is not bundled.*http\/protobuf or http\/json, got "grpc"/);
  assert.match(byVariable.OTEL_EXPORTER_OTLP_ENDPOINT!, /http:\/\/ or https:\/\/ URL, got "collector:4318"/);
  assert.match(byVariable.OTEL_TRACES_SAMPLER!, /"xray" is not a sampler/);
  const message = tracingProblemsMessage(problems);
  for (const p of problems) assert.ok(message.includes(p.variable), message);
  assert.match(
    problemsOf(tracingConfigFromEnv({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }, 's'))[0]!.error,
    /from 0 to 1/,
  );
  assert.equal(
    problemsOf(tracingConfigFromEnv({ OTEL_TRACES_EXPORTER: 'jaeger' }, 's'))[0]!.variable,
    'OTEL_TRACES_EXPORTER',
    'an unknown exporter alone is refused, not taken for "off"',
  );
});
