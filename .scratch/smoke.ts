import { mkdtempSync, mkdirSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { startLambdaEmulator } from '../src/testing/lambda-emulator.ts';
const task = mkdtempSync(join(tmpdir(), 'ric-smoke-'));
mkdirSync(join(task, 'functions'));
copyFileSync('/tmp/ric-measure-runtime-SDK.mjs', join(task, 'functions/memcached.mjs'));
for (const env of [{}]) {
  const em = await startLambdaEmulator({ taskRoot: task, handler: 'functions/memcached.handler', timeoutSeconds: 5, env: { ...env, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 't', AWS_SECRET_ACCESS_KEY: 't', OPERLESS_QUEUE_URL: 'http://127.0.0.1:1/q', OPERLESS_DLQ_URL: 'http://127.0.0.1:1/d', AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:1' } });
  const r = await em.invoke({ Records: [{ messageId: 'm1', receiptHandle: 'r', body: 'x', attributes: { ApproximateReceiveCount: '1' }, messageAttributes: {}, eventSource: 'aws:sqs' }] });
  console.log(JSON.stringify({ ...r, body: r.body.slice(0, 400) }));
  console.log(em.output().split('\n').slice(-12).join('\n'));
  await em.stop();
}
