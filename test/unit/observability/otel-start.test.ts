/**
 * Tracing turned on from OTEL_* (src/observability/otel-start.ts, otel-sdk.ts) and the function's
 * flush (src/core/handler/handler.ts):
 * - unset, a function's invocation loads no SDK module at all (a child process records every
 *   module it resolves; with `OTEL_TRACES_EXPORTER=console` the same run does load it — the
 *   control that the check can fail);
 * - set, the SDK exports over OTLP/HTTP (protobuf by default, JSON when asked) to a real HTTP
 *   endpoint here, with the service name and X-Ray-compatible (time-prefixed) trace ids, and
 *   only when flushed (the schedule delay is set far beyond the test);
 * - the handler flushes before it answers, bounded by the time left;
 * - a provider registered first (the ADOT layer's) is left alone; a bad value rejects naming it.
 */
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { operlessTracer } from '../../../src/observability/trace-context.ts';
import { hasGlobalTracerProvider, resetTracingForTests, startTracingFromEnv, TracingConfigError } from '../../../src/observability/otel-start.ts';
import { defineController } from '../../../src/core/controller/controller.ts';
import { flushBudgetMs, FLUSH_MAX_MS, toSqsHandler } from '../../../src/core/handler/handler.ts';
import { done } from '../../../src/core/controller/result.ts';
import { silentLogger } from '../../../src/observability/log.ts';
import { noMetrics } from '../../../src/core/reconcile/metrics.ts';
import { lambdaContext } from '../core/fakes.ts';

afterEach(() => {
  trace.disable();
  resetTracingForTests();
});

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Runs one empty invocation of a function in a fresh process; returns the SDK modules it resolved. */
function sdkModulesLoadedByAnInvocation(env: Record<string, string>): string[] {
  const script = `
    import { registerHooks } from 'node:module';
    const seen = [];
    registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.push(r.url); return r; } });
    const { toSqsHandler } = await import('./src/core/handler/handler.ts');
    const { defineController } = await import('./src/core/controller/controller.ts');
    const handler = toSqsHandler(defineController({ apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true, reconcile: async () => ({}) }), { queueUrl: 'http://q/work', clients: async () => { throw new Error('unused'); } });
    await handler({ Records: [] }, { awsRequestId: 'r', getRemainingTimeInMillis: () => 10000 });
    process.stdout.write(JSON.stringify(seen.filter((url) => /otel-sdk|sdk-trace|exporter-trace|otlp-/.test(url))));
  `;
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')));
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    env: { ...clean, OPERLESS_LOG_LEVEL: 'error', OPERLESS_METRICS: 'off', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout.trim().split('\n').pop() ?? '[]') as string[];
}

test('unset, an invocation loads no SDK module; asked for, it does', () => {
  assert.deepEqual(sdkModulesLoadedByAnInvocation({}), []);
  const loaded = sdkModulesLoadedByAnInvocation({ OTEL_TRACES_EXPORTER: 'console' });
  assert.ok(
    loaded.some((url) => url.includes('otel-sdk')),
    `the control: ${JSON.stringify(loaded)}`,
  );
});

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

async function otlpEndpoint(): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' }).end(req.headers['content-type']?.includes('json') ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

test('set, spans go over OTLP/HTTP (protobuf by default) only when flushed, named by the service, with X-Ray-compatible trace ids', async () => {
  const endpoint = await otlpEndpoint();
  try {
    const tracing = await startTracingFromEnv(
      { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint.url, OTEL_BSP_SCHEDULE_DELAY: '600000', OTEL_EXPORTER_OTLP_HEADERS: 'x-tenant=t1' },
      'operless-function',
    );
    assert.equal(tracing.mode, 'sdk');
    assert.equal(await startTracingFromEnv({}, 'other'), tracing, 'one SDK per process');
    const span = operlessTracer().startSpan('operless.reconcile');
    span.end();
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(endpoint.received.length, 0, 'nothing leaves before the flush');
    await tracing.flush(5000);
    assert.equal(endpoint.received.length, 1);
    const [request] = endpoint.received;
    assert.equal(request!.path, '/v1/traces');
    assert.equal(request!.headers['content-type'], 'application/x-protobuf');
    assert.equal(request!.headers['x-tenant'], 't1');
    assert.ok(request!.body.includes(Buffer.from('operless.reconcile')) && request!.body.includes(Buffer.from('operless-function')));
    const seconds = Number.parseInt(span.spanContext().traceId.slice(0, 8), 16);
    assert.ok(Math.abs(seconds - Date.now() / 1000) < 600, `trace id ${span.spanContext().traceId} does not start with the time`);
    await tracing.shutdown(2000);
  } finally {
    await endpoint.close();
  }
});

test('http/json sends OTLP JSON', async () => {
  const endpoint = await otlpEndpoint();
  try {
    const tracing = await startTracingFromEnv(
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${endpoint.url}/custom`, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'svc-json' },
      'x',
    );
    operlessTracer().startSpan('operless.forward').end();
    await tracing.flush(5000);
    const [request] = endpoint.received;
    assert.equal(request?.path, '/custom');
    const body = JSON.parse(request!.body.toString('utf8')) as {
      resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] }; scopeSpans: { spans: { name: string }[] }[] }[];
    };
    assert.equal(body.resourceSpans[0]!.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue, 'svc-json');
    assert.equal(body.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.name, 'operless.forward');
    await tracing.shutdown(2000);
  } finally {
    await endpoint.close();
  }
});

test("a provider registered first (the ADOT layer's) is used as it is; a bad value rejects naming it", async () => {
  assert.equal(hasGlobalTracerProvider(), false);
  trace.setGlobalTracerProvider(new BasicTracerProvider());
  assert.equal(hasGlobalTracerProvider(), true);
  assert.equal((await startTracingFromEnv({ OTEL_TRACES_EXPORTER: 'otlp' }, 's')).mode, 'external');
  resetTracingForTests();
  await assert.rejects(startTracingFromEnv({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'sometimes' }, 's'), (err: unknown) => {
    assert.ok(err instanceof TracingConfigError);
    assert.match(err.message, /OTEL_TRACES_SAMPLER: "sometimes" is not a sampler/);
    return true;
  });
});

test('the handler flushes before it answers, within the time left; a bad variable fails the invocation naming it', async () => {
  const events: string[] = [];
  const budgets: number[] = [];
  const handler = toSqsHandler(
    defineController({ apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true, reconcile: async () => done() }),
    {
      queueUrl: 'http://q/work',
      clients: async () => {
        throw new Error('unused');
      },
      log: silentLogger,
      metrics: noMetrics,
      tracing: async () => ({
        mode: 'sdk',
        flush: async (ms) => {
          budgets.push(ms);
          await new Promise((r) => setTimeout(r, 20));
          events.push('flushed');
        },
        shutdown: async () => {},
      }),
    },
  );
  await handler(
    { Records: [] },
    lambdaContext(() => 1000),
  ).then(() => events.push('answered'));
  assert.deepEqual(events, ['flushed', 'answered']);
  assert.deepEqual(budgets, [900]);
  assert.equal(flushBudgetMs(lambdaContext(() => 60_000)), FLUSH_MAX_MS);
  assert.equal(flushBudgetMs(lambdaContext(() => 50)), 0);
  const failing = toSqsHandler(
    defineController({ apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true, reconcile: async () => done() }),
    {
      queueUrl: 'http://q/work',
      clients: async () => {
        throw new Error('unused');
      },
      log: silentLogger,
      metrics: noMetrics,
      tracing: () => startTracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' }, 'f'),
    },
  );
  await assert.rejects(failing({ Records: [] }, lambdaContext()), /OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:\/\/ or https:\/\/ URL/);
});
