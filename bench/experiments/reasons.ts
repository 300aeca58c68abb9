// Ad-hoc: which messages make the Operless reconciles in convergence N (default 1000).
import { copyFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { SQSEvent } from 'aws-lambda';
import { startBenchEnv, CLUSTER_ID, type SystemUnderTest } from '../lib/systems.ts';
import { measureConvergence } from '../scenarios/convergence.ts';
import { startForwarder } from '../../src/forwarder/forwarder.ts';
import { createSqsQueue } from '../../src/forwarder/queue-client.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { startLambdaRunner } from '../../src/queue/lambda-runner.ts';

const N = Number(process.env.N ?? 1000);
const env = await startBenchEnv();
const reasons = new Map<string, number>();
const perKey = new Map<string, number>();
let batches = 0; let records = 0; let groupedAway = 0;
const t0 = Date.now();
const timeline: [number, string][] = [];
try {
  const r = await measureConvergence(env, 'reasons', async (namespace): Promise<SystemUnderTest> => {
    const { queueUrl, dlqUrl } = await env.createQueue('reasons', 'reasons-dlq');
    const fn = env.bundles.find((b) => b.name === 'memcached')!;
    const module = join(dirname(fn.path), 'memcached-reasons.mjs');
    copyFileSync(fn.path, module);
    Object.assign(process.env, { OPERLESS_QUEUE_URL: queueUrl, OPERLESS_DLQ_URL: dlqUrl, OPERLESS_CLUSTER: CLUSTER_ID, OPERLESS_KUBECONFIG: env.cp.kubeconfigPath, OPERLESS_METRICS: 'off', OPERLESS_LOG_LEVEL: 'error', OPERLESS_CONCURRENCY: '1', AWS_REGION: env.queues.region, AWS_ENDPOINT_URL_SQS: env.sqsCounter.endpoint, AWS_ACCESS_KEY_ID: 'b', AWS_SECRET_ACCESS_KEY: 'b' });
    const inner = (await import(pathToFileURL(module).href)).handler as (e: SQSEvent, c: unknown) => Promise<unknown>;
    const runner = await startLambdaRunner({ queueUrl, sqs: env.sqs, functionName: 'memcached', batchSize: Number(process.env.BATCH ?? 10), batchWindowSeconds: Number(process.env.WINDOW ?? 0), maxConcurrency: 10, timeoutSeconds: 30, memoryLimitMB: 256, logger: silentLogger,
      handler: async (event, context) => {
        batches++;
        const keys = new Set<string>();
        for (const rec of event.Records) {
          records++;
          const body = JSON.parse(rec.body) as { reason: string; name: string; resourceVersion?: string };
          const tag = `${body.reason}${body.reason === 'Owned' ? (body.resourceVersion ? '+rv' : '-rv') : ''}`;
          reasons.set(tag, (reasons.get(tag) ?? 0) + 1);
          if (keys.has(body.name)) groupedAway++;
          keys.add(body.name);
          perKey.set(body.name, (perKey.get(body.name) ?? 0) + 1);
          timeline.push([Date.now() - t0, tag]);
        }
        return (await inner(event, context)) as never;
      } });
    const k = (x: { apiVersion: string; kind: string; plural: string; namespaced: boolean }) => ({ apiVersion: x.apiVersion, kind: x.kind, plural: x.plural, namespaced: x.namespaced, namespaces: [namespace] });
    const fwd = startForwarder({ clusterId: CLUSTER_ID, queue: { url: queueUrl, region: env.queues.region, endpoint: env.sqsCounter.endpoint }, primaries: [k(env.controller.kind)], owned: (env.controller.spec.owns ?? []).map(k), leaderElection: { enabled: false }, ...(process.env.COALESCE ? { coalesceWindowMs: Number(process.env.COALESCE) } : {}), ...(process.env.MAXW ? { coalesceMaxWindowMs: Number(process.env.MAXW) } : {}) },
      { kubeConfig: env.cp.kubeConfig, logger: silentLogger, serve: false, queue: createSqsQueue({ queueUrl, region: env.queues.region, client: env.sqs }) });
    return { label: 'reasons', runner, ready: fwd.ready, reconciles: () => records, enqueue: async () => {}, stopWatching: async () => {}, stop: async () => { await fwd.stop({ graceMs: 1000 }); await runner.stop(); } } as unknown as SystemUnderTest;
  }, N, 3, 900_000);
  console.log(r);
  console.log('by reason', [...reasons]);
  console.log({ batches, records, groupedAway, keys: perKey.size });
  const hist = new Map<number, number>();
  for (const c of perKey.values()) hist.set(c, (hist.get(c) ?? 0) + 1);
  console.log('records per key', [...hist].sort((a, b) => a[0] - b[0]));
  const buckets = new Map<number, Map<string, number>>();
  for (const [t, tag] of timeline) { const b = Math.floor(t / 10000) * 10; const m = buckets.get(b) ?? new Map(); m.set(tag, (m.get(tag) ?? 0) + 1); buckets.set(b, m); }
  for (const [b, m] of [...buckets].sort((a, b) => a[0] - b[0])) console.log(`${b}s`, Object.fromEntries(m));
} finally {
  await env.stop();
}
