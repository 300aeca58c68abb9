/**
 * Admission latency through the webhook path: a server-side dry-run create of a Memcached
 * (the API server runs the mutating and validating webhooks; nothing is stored) measured from
 * the client, p50/p99 over `N` requests (default 200) in three modes:
 *
 * - `none`: in the operator's namespace, which the namespace selector excludes (no webhook call);
 * - `warm`: both webhooks, through the forwarder's endpoint, the AWS SDK's Lambda client and the
 *   local Invoke API, the handler warm (its Kubernetes client created);
 * - `fresh`: as warm, but each request gets a new handler instance (a new Kubernetes client and
 *   its first reads): the handler's share of a cold start, NOT a Lambda cold start (no runtime
 *   init, no module load; those are `coldCpuMs` in `npm run bench -- --only function`).
 *
 *   node bench/experiments/webhook-latency.ts        (N=50 for a quick run)
 */
import https from 'node:https';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { startControlPlane, waitUntil } from '../../src/testing/index.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/testing/x509.ts';
import { createClientFactory } from '../../src/kube/factory.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { generateCrd } from '../../src/crd/generate.ts';
import { generateWebhookConfigurations } from '../../src/crd/webhooks.ts';
import { toWebhookHandler } from '../../src/core/webhook/webhook.ts';
import { startLambdaInvokeServer, type InvokeHandler } from '../../src/local/lambda-invoke-server.ts';
import { startWebhookEndpoint } from '../../src/forwarder/webhook/endpoint.ts';
import { DEFAULT_WEBHOOK_LIMITS } from '../../src/forwarder/webhook/server.ts';
import { lambdaInvoker } from '../../src/forwarder/webhook/lambda-invoker.ts';
import { MemcachedResource } from '../../src/memcached/types.ts';
import { memcachedWebhook } from '../../src/memcached/webhook.ts';

const N = Number(process.env.N ?? 200);
const OPERATOR_NS = 'operless-system';
const APPS = 'apps';

const cp = await startControlPlane({ crds: [generateCrd(MemcachedResource)] });
const dir = mkdtempSync(join(tmpdir(), 'webhook-bench-'));
try {
  const ca = await createCertificateAuthority('bench-ca');
  const serving = await issueCertificate(ca, { commonName: 'bench', hosts: ['127.0.0.1'], usage: 'server' });
  writeFileSync(join(dir, 'tls.crt'), serving.certPem);
  writeFileSync(join(dir, 'tls.key'), serving.keyPem);
  for (const ns of [OPERATOR_NS, APPS]) await cp.kubectl(['create', 'namespace', ns]);
  const clients = () => createClientFactory({ env: { OPERLESS_KUBECONFIG: cp.kubeconfigPath } });
  const functions: Record<string, InvokeHandler> = { fn: toWebhookHandler(memcachedWebhook, { clients: clients(), log: silentLogger }) as InvokeHandler };
  const invoke = await startLambdaInvokeServer({ functions });
  const lambda = new LambdaClient({ endpoint: invoke.endpoint, region: 'us-east-1', maxAttempts: 1, credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  const endpoint = await startWebhookEndpoint(
    {
      enabled: true,
      host: '127.0.0.1',
      port: 0,
      certFile: join(dir, 'tls.crt'),
      keyFile: join(dir, 'tls.key'),
      functions: { memcached: 'fn' },
      limits: DEFAULT_WEBHOOK_LIMITS,
      clientAuth: { names: [] },
      drainSeconds: 0,
    },
    silentLogger,
    lambdaInvoker({ client: lambda }),
  );
  const caBundle = Buffer.from(ca.certPem).toString('base64');
  for (const c of generateWebhookConfigurations({
    resource: MemcachedResource,
    operatorNamespace: OPERATOR_NS,
    clientConfig: (r) => ({ url: `${endpoint.url}/memcached/${r}`, caBundle }),
    default: {},
    validate: {},
  })) {
    await cp.kubectl(['apply', '-f', '-'], { input: JSON.stringify(c) });
  }
  const dryRunCreate = (namespace: string) =>
    new Promise<{ status: number; ms: number; defaulted: boolean }>((resolve, reject) => {
      const started = performance.now();
      const body = JSON.stringify({
        apiVersion: 'cache.example.com/v1alpha1',
        kind: 'Memcached',
        metadata: { generateName: 'b-', namespace },
        spec: { size: 1 },
      });
      const req = https.request(
        `${cp.server}/apis/cache.example.com/v1alpha1/namespaces/${namespace}/memcacheds?dryRun=All`,
        {
          method: 'POST',
          ca: cp.caPem,
          headers: { Authorization: `Bearer ${cp.admin.token}`, 'Content-Type': 'application/json' },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, defaulted: text.includes('"resources"') }));
        },
      );
      req.once('error', reject);
      req.end(body);
    });
  await waitUntil('webhooks active', async () => (await dryRunCreate(APPS)).defaulted, { timeoutMs: 30_000 });
  const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] as number;
  const run = async (mode: string, namespace: string, before?: () => void) => {
    const times: number[] = [];
    for (let i = 0; i < N; i++) {
      before?.();
      const r = await dryRunCreate(namespace);
      if (r.status !== 201 || r.defaulted !== (namespace === APPS)) throw new Error(`${mode}: unexpected answer HTTP ${r.status} defaulted=${r.defaulted}`);
      times.push(r.ms);
    }
    console.log(`${mode.padEnd(6)} n=${N}  p50 ${pct(times, 50).toFixed(1)} ms  p99 ${pct(times, 99).toFixed(1)} ms`);
  };
  await run('none', OPERATOR_NS);
  await run('warm', APPS);
  await run('fresh', APPS, () => {
    functions.fn = toWebhookHandler(memcachedWebhook, { clients: clients(), log: silentLogger }) as InvokeHandler;
  });
  await endpoint.close();
  await invoke.close();
} finally {
  await cp.stop();
  rmSync(dir, { recursive: true, force: true });
}
