// Ad-hoc: per-hop latency of the Operless path during the lag run.
import { copyFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { SQSEvent } from 'aws-lambda';
import { startBenchEnv, CLUSTER_ID, type SystemUnderTest } from '../lib/systems.ts';
import { measureLag } from '../scenarios/lag.ts';
import { startForwarder } from '../../src/forwarder/forwarder.ts';
import { createSqsQueue } from '../../src/forwarder/queue-client.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { startLambdaRunner } from '../../src/queue/lambda-runner.ts';

const env = await startBenchEnv();
const reasons = new Map<string, number>();
const hops: { send: number; recv: number; start: number; done: number }[] = [];
try {
  const r = await measureLag(env, 'hops', async (namespace): Promise<SystemUnderTest> => {
    const { queueUrl, dlqUrl } = await env.createQueue('hops', 'hops-dlq');
    const fn = env.bundles.find((b) => b.name === 'memcached')!;
    const module = join(dirname(fn.path), 'memcached-hops.mjs');
    copyFileSync(fn.path, module);
    Object.assign(process.env, { OPERLESS_QUEUE_URL: queueUrl, OPERLESS_DLQ_URL: dlqUrl, OPERLESS_CLUSTER: CLUSTER_ID, OPERLESS_KUBECONFIG: env.cp.kubeconfigPath, OPERLESS_METRICS: 'off', OPERLESS_LOG_LEVEL: 'error', OPERLESS_CONCURRENCY: '1', AWS_REGION: env.queues.region, AWS_ENDPOINT_URL_SQS: env.sqsCounter.endpoint, AWS_ACCESS_KEY_ID: 'b', AWS_SECRET_ACCESS_KEY: 'b' });
    const inner = (await import(pathToFileURL(module).href)).handler as (e: SQSEvent, c: unknown) => Promise<unknown>;
    const runner = await startLambdaRunner({ queueUrl, sqs: env.sqs, functionName: 'memcached', batchSize: 10, batchWindowSeconds: 0, maxConcurrency: 10, timeoutSeconds: 30, memoryLimitMB: 256, logger: silentLogger,
      handler: async (event, context) => {
        const start = Date.now();
        const out = await inner(event, context);
        const done = Date.now();
        for (const rec of event.Records) {
          const body = JSON.parse(rec.body) as { observedAt: number; reason: string };
          if (body.reason !== 'Modified') { reasons.set(body.reason, (reasons.get(body.reason) ?? 0) + 1); continue; }
          hops.push({ send: Number(rec.attributes.SentTimestamp) - body.observedAt, recv: Number(rec.attributes.ApproximateFirstReceiveTimestamp) - Number(rec.attributes.SentTimestamp), start: start - Number(rec.attributes.ApproximateFirstReceiveTimestamp), done: done - start });
        }
        return out as never;
      } });
    const k = (x: { apiVersion: string; kind: string; plural: string; namespaced: boolean }) => ({ apiVersion: x.apiVersion, kind: x.kind, plural: x.plural, namespaced: x.namespaced, namespaces: [namespace] });
    const fwd = startForwarder({ clusterId: CLUSTER_ID, queue: { url: queueUrl, region: env.queues.region, endpoint: env.sqsCounter.endpoint }, primaries: [k(env.controller.kind)], owned: (env.controller.spec.owns ?? []).map(k), leaderElection: { enabled: false } },
      { kubeConfig: env.cp.kubeConfig, logger: silentLogger, serve: false, queue: createSqsQueue({ queueUrl, region: env.queues.region, client: env.sqs }) });
    return { label: 'hops', runner, ready: fwd.ready, reconciles: () => runner.stats.recordsDeleted, enqueue: async () => {}, stopWatching: async () => {}, stop: async () => { await fwd.stop({ graceMs: 1000 }); await runner.stop(); } } as unknown as SystemUnderTest;
  }, { pool: 50, rate: 20, seconds: 60 });
  const med = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log([...reasons]); console.log(`lag p50 ${r.p50} p99 ${r.p99}; Modified records ${hops.length}`);
  for (const key of ['send', 'recv', 'start', 'done'] as const) console.log(`${key}: p50 ${med(hops.map((h) => h[key]))} p90 ${hops.map((h) => h[key]).sort((a, b) => a - b)[Math.floor(hops.length * 0.9)]}`);
} finally {
  await env.stop();
}
