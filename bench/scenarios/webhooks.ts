/**
 * Admission latency through the shipped webhook path (issue 18): the API server calls the
 * forwarder's HTTPS webhook endpoint, which invokes the webhooks function with the AWS SDK's
 * Lambda client against the local Lambda Invoke API, which runs the function's shipped bundle
 * (`env.bundles`, built like the Lambda zip). Each request is a server-side dry-run create of a
 * Memcached — the mutating and the validating webhook, two invocations, nothing stored —
 * timed at the client; p50/p99 in three modes:
 *
 * - `none`: in the operator's namespace, which the namespace selector excludes: the API
 *   server's own time, the floor the webhooks add to;
 * - `warm`: one function instance kept warm (the bundle imported once in this process);
 * - `cold`: every invocation in a fresh Node process that imports the bundle (a new Lambda
 *   instance: process start, module load, the first Kubernetes client and reads). Not
 *   included: Lambda's own runtime init and the network hop to AWS (docs/benchmarks.md).
 *
 * The webhook configurations are deleted afterwards, so no later scenario pays for them.
 */
import { spawn } from 'node:child_process';
import https from 'node:https';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { generateWebhookConfigurations } from '../../src/crd/webhooks.ts';
import { startWebhookEndpoint } from '../../src/forwarder/webhook/endpoint.ts';
import { DEFAULT_WEBHOOK_LIMITS } from '../../src/forwarder/webhook/server.ts';
import { lambdaInvoker } from '../../src/forwarder/webhook/lambda-invoker.ts';
import { startLambdaInvokeServer, type InvokeHandler } from '../../src/local/lambda-invoke-server.ts';
import { MemcachedResource } from '../../src/memcached/types.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { waitUntil } from '../../src/testing/index.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/testing/x509.ts';
import { percentile } from '../lib/stats.ts';
import type { BenchEnv } from '../lib/systems.ts';
import { copyBundle } from '../../scripts/bundle.ts';

const CHILD = fileURLToPath(new URL('../webhook-invoke-child.ts', import.meta.url));
const FUNCTION = 'webhooks';
const CONFIGURATION_KINDS = {
  MutatingWebhookConfiguration: 'mutatingwebhookconfigurations',
  ValidatingWebhookConfiguration: 'validatingwebhookconfigurations',
} as const;

export interface WebhookOptions {
  /** Dry-run creates per warm / none mode. */
  readonly requests: number;
  /** Dry-run creates in cold mode (each spawns two processes). */
  readonly coldRequests: number;
}

export interface WebhookLatency {
  readonly mode: 'none' | 'warm' | 'cold';
  readonly requests: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export interface WebhookResult {
  readonly rows: WebhookLatency[];
  /** Cold invocations: median import of the bundle and of the first call, ms (inside the fresh process). */
  readonly cold: { readonly importMs: number; readonly callMs: number; readonly bootMs: number };
  readonly bundleBytes: number;
}

export async function measureWebhooks(env: BenchEnv, namespace: string, options: WebhookOptions): Promise<WebhookResult> {
  const bundle = env.bundles.find((b) => b.name === FUNCTION);
  if (!bundle) throw new Error(`the function bundles have no "${FUNCTION}" function (built: ${env.bundles.map((b) => b.name).join(', ')})`);
  const operatorNs = await env.namespace(`${namespace}-operator`);
  const appNs = await env.namespace(namespace);
  const dir = join(env.workDir, `webhooks-${namespace}`);
  mkdirSync(dir, { recursive: true });
  const ca = await createCertificateAuthority('bench-webhook-ca');
  const serving = await issueCertificate(ca, { commonName: 'bench-webhooks', hosts: ['127.0.0.1'], usage: 'server' });
  writeFileSync(join(dir, 'tls.crt'), serving.certPem);
  writeFileSync(join(dir, 'tls.key'), serving.keyPem, { mode: 0o600 });

  // The function's environment, as serverless.yml gives it (its Kubernetes identity: the admin here).
  const functionEnv = { OPERLESS_KUBECONFIG: env.cp.kubeconfigPath, OPERLESS_CLUSTER: 'bench', OPERLESS_LOG_LEVEL: 'error', OPERLESS_METRICS: 'off' };
  Object.assign(process.env, functionEnv);
  const warmModule = copyBundle(bundle, join(dirname(bundle.path), `warm-${namespace}`));
  const warm = ((await import(pathToFileURL(warmModule).href)) as { handler: InvokeHandler }).handler;
  const coldTimings: { importMs: number; callMs: number; bootMs: number }[] = [];
  const cold: InvokeHandler = (event) =>
    coldInvocation(bundle.path, event, { ...process.env, ...functionEnv }).then((r) => {
      coldTimings.push({ importMs: r.importMs, callMs: r.callMs, bootMs: r.bootMs });
      return r.result;
    });
  const functions: Record<string, InvokeHandler> = { [FUNCTION]: warm };
  const invokeApi = await startLambdaInvokeServer({ functions, timeoutMs: 9_000 });
  const lambda = new LambdaClient({
    endpoint: invokeApi.endpoint,
    region: 'us-east-1',
    maxAttempts: 1,
    credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
  });
  const endpoint = await startWebhookEndpoint(
    {
      enabled: true,
      host: '127.0.0.1',
      port: 0,
      certFile: join(dir, 'tls.crt'),
      keyFile: join(dir, 'tls.key'),
      functions: { memcached: FUNCTION },
      limits: DEFAULT_WEBHOOK_LIMITS,
      clientAuth: { names: [] },
      drainSeconds: 0,
    },
    silentLogger,
    lambdaInvoker({ client: lambda }),
  );
  const caBundle = Buffer.from(ca.certPem).toString('base64');
  const configurations = generateWebhookConfigurations({
    resource: MemcachedResource,
    operatorNamespace: operatorNs,
    clientConfig: (route) => ({ url: `${endpoint.url}/memcached/${route}`, caBundle }),
    default: {},
    validate: {},
  });
  try {
    for (const c of configurations) await env.cp.kubectl(['apply', '-f', '-'], { input: JSON.stringify(c) });
    const dryRun = dryRunCreate(env);
    await waitUntil('the webhooks are called', async () => (await dryRun(appNs)).defaulted, { timeoutMs: 30_000 });
    const measure = async (mode: WebhookLatency['mode'], ns: string, requests: number): Promise<WebhookLatency> => {
      const times: number[] = [];
      for (let i = 0; i < requests; i++) {
        const r = await dryRun(ns);
        if (r.status !== 201 || r.defaulted !== (ns === appNs))
          throw new Error(`webhooks ${mode}: HTTP ${r.status}, defaulted ${r.defaulted}: ${r.text.slice(0, 300)}`);
        times.push(r.ms);
      }
      return { mode, requests, p50: round(percentile(times, 50)), p99: round(percentile(times, 99)), max: round(Math.max(...times)) };
    };
    const rows = [await measure('none', operatorNs, options.requests), await measure('warm', appNs, options.requests)];
    functions[FUNCTION] = cold;
    rows.push(await measure('cold', appNs, options.coldRequests));
    const median = (xs: number[]) => round(percentile(xs, 50));
    return {
      rows,
      cold: {
        importMs: median(coldTimings.map((t) => t.importMs)),
        callMs: median(coldTimings.map((t) => t.callMs)),
        bootMs: median(coldTimings.map((t) => t.bootMs)),
      },
      bundleBytes: bundle.bytes,
    };
  } finally {
    for (const c of configurations) {
      const kind = CONFIGURATION_KINDS[c.kind as keyof typeof CONFIGURATION_KINDS];
      await env.cp.kubectl(['delete', kind, String((c.metadata as { name: string }).name), '--ignore-not-found']);
    }
    await endpoint.close();
    await invokeApi.close();
    lambda.destroy();
  }
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** A server-side dry-run create of a Memcached, timed at the client. */
function dryRunCreate(env: BenchEnv) {
  return (namespace: string) =>
    new Promise<{ status: number; ms: number; defaulted: boolean; text: string }>((resolve, reject) => {
      const started = performance.now();
      const body = JSON.stringify({
        apiVersion: 'cache.example.com/v1alpha1',
        kind: 'Memcached',
        metadata: { generateName: 'bench-', namespace },
        spec: { size: 1 },
      });
      const req = https.request(
        `${env.cp.server}/apis/cache.example.com/v1alpha1/namespaces/${namespace}/memcacheds?dryRun=All`,
        {
          method: 'POST',
          ca: env.cp.caPem,
          headers: { Authorization: `Bearer ${env.cp.admin.token}`, 'Content-Type': 'application/json' },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, defaulted: text.includes('"resources"'), text }));
        },
      );
      req.once('error', reject);
      req.end(body);
    });
}

/** One invocation in a fresh Node process (bench/webhook-invoke-child.ts). */
function coldInvocation(
  bundle: string,
  event: unknown,
  childEnv: NodeJS.ProcessEnv,
): Promise<{ result: unknown; importMs: number; callMs: number; bootMs: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, bundle], { env: childEnv, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      const line = out.trim().split('\n').at(-1) ?? '';
      try {
        if (code !== 0) throw new Error(`exit ${code}`);
        resolve(JSON.parse(line) as { result: unknown; importMs: number; callMs: number; bootMs: number });
      } catch (e) {
        reject(new Error(`cold webhook invocation failed (${(e as Error).message}): ${err.slice(-500)}`));
      }
    });
    child.stdin.end(JSON.stringify(event));
  });
}
