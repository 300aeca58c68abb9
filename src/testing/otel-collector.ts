/**
 * A real OTLP receiver for tests: the OpenTelemetry Collector, built from Go modules (a minimal
 * build: its OTLP receiver and the contrib file exporter, `modules/otelcol`, provisioned by the
 * test that needs it: `build.sh otelcol`), listening for OTLP/HTTP on a loopback port and
 * writing every span it receives as OTLP JSON lines to a file this helper reads back.
 *
 * Guarantees: `startOtelCollector()` resolves when the receiver answers an OTLP/HTTP export;
 * `spans()` returns every span received so far, flattened with its service name; `stop()` ends
 * the process and removes its folder; no orphans (process.ts); a collector that fails to start
 * quotes its log tail.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOOPBACK } from './config.ts';
import { httpCall } from './http.ts';
import { assertPortFree, freePorts } from './ports.ts';
import { removeOnExit, startProcess } from './process.ts';
import { provision } from './provision.ts';
import { waitComponentReady } from './readiness.ts';

/** One span as the collector received it (OTLP JSON: ids are hex strings). */
export interface ReceivedSpan {
  readonly serviceName: string | undefined;
  readonly traceId: string;
  readonly spanId: string;
  /** Empty for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
}

export interface OtelCollector {
  /** The OTLP/HTTP base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`): http://127.0.0.1:PORT. */
  readonly otlpHttpEndpoint: string;
  readonly logPath: string;
  /** Every span received so far. */
  spans(): ReceivedSpan[];
  stop(): Promise<void>;
}

/** The collector's configuration: OTLP/HTTP on `port` → file exporter to `path`, no telemetry server. Pure. */
export function collectorConfig(port: number, path: string): string {
  return [
    'receivers:',
    '  otlp:',
    '    protocols:',
    '      http:',
    `        endpoint: ${LOOPBACK}:${port}`,
    'exporters:',
    '  file:',
    `    path: ${JSON.stringify(path)}`,
    '    flush_interval: 100ms',
    'service:',
    '  telemetry:',
    '    metrics:',
    '      level: none',
    '    logs:',
    '      level: warn',
    '  pipelines:',
    '    traces:',
    '      receivers: [otlp]',
    '      exporters: [file]',
    '',
  ].join('\n');
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value?: AnyValue };

function attributesOf(list: readonly KeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    const v = value?.stringValue ?? (value?.intValue !== undefined ? Number(value.intValue) : undefined) ?? value?.boolValue ?? value?.doubleValue;
    if (v !== undefined) out[key] = v;
  }
  return out;
}

/** The spans of the file exporter's OTLP JSON lines (a line not yet complete is skipped). Pure. */
export function parseExportedSpans(text: string): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let parsed: {
      resourceSpans?: {
        resource?: { attributes?: KeyValue[] };
        scopeSpans?: { spans?: { traceId: string; spanId: string; parentSpanId?: string; name: string; attributes?: KeyValue[] }[] }[];
      }[];
    };
    try {
      parsed = JSON.parse(line);
    } catch {
      continue;
    }
    for (const rs of parsed.resourceSpans ?? []) {
      const serviceName = attributesOf(rs.resource?.attributes)['service.name'];
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          spans.push({
            serviceName: typeof serviceName === 'string' ? serviceName : undefined,
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ?? '',
            name: s.name,
            attributes: attributesOf(s.attributes),
          });
        }
      }
    }
  }
  return spans;
}

export async function startOtelCollector(options: { readyTimeoutMs?: number } = {}): Promise<OtelCollector> {
  const { otelCollector } = await provision({ targets: ['otelcol'] });
  if (!otelCollector) throw new Error('provisioning returned no collector; this is a bug in provision.ts');
  const dir = mkdtempSync(join(tmpdir(), 'operless-otelcol-'));
  const forgetDir = removeOnExit(dir);
  const [port = 0] = await freePorts(1);
  await assertPortFree('otelcol', port);
  const output = join(dir, 'traces.jsonl');
  const configPath = join(dir, 'config.yaml');
  writeFileSync(configPath, collectorConfig(port, output));
  const endpoint = `http://${LOOPBACK}:${port}`;
  const logPath = join(dir, 'otelcol.log');
  const proc = startProcess({ name: 'otelcol', command: otelCollector, args: [`--config=file:${configPath}`], logPath, cleanupDir: dir });
  const stop = async () => {
    await proc.stop();
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    forgetDir();
  };
  try {
    await waitComponentReady(
      proc,
      async () => {
        const res = await httpCall(`${endpoint}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', timeoutMs: 2000 });
        return res.status === 200 || `HTTP ${res.status}`;
      },
      options.readyTimeoutMs ?? 60_000,
      { logPattern: /address already in use/i, hint: ' Its port is in use by another process: try again.' },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    otlpHttpEndpoint: endpoint,
    logPath,
    spans: () => (existsSync(output) ? parseExportedSpans(readFileSync(output, 'utf8')) : []),
    stop,
  };
}
