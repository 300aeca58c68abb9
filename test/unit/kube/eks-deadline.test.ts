/**
 * The DescribeCluster deadline fits inside the webhooks function's Lambda timeout with room for
 * the admission itself: a cold webhook invocation on EKS that waits the whole deadline must still
 * answer before Lambda ends it (and before the API server's timeoutSeconds).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { DESCRIBE_CLUSTER_TIMEOUT_MS } from '../../../src/kube/eks.ts';

/** Room the admission needs after DescribeCluster: a namespace GET, a LIST and the answer. */
const ADMISSION_ROOM_MS = 5_000;

test("DescribeCluster's deadline leaves the webhooks function (serverless.yml) room for the admission", () => {
  const yml = readFileSync(new URL('../../../serverless.yml', import.meta.url), 'utf8');
  const block = /^ {2}webhooks:\n((?: {4}.*\n|\s*\n)+)/m.exec(yml)?.[1] ?? '';
  const timeout = Number(/^ {4}timeout: (\d+)$/m.exec(block)?.[1]);
  assert.ok(Number.isInteger(timeout), 'the webhooks function has a timeout');
  assert.ok(
    DESCRIBE_CLUSTER_TIMEOUT_MS + ADMISSION_ROOM_MS <= timeout * 1000,
    `${DESCRIBE_CLUSTER_TIMEOUT_MS} ms + ${ADMISSION_ROOM_MS} ms must fit the webhooks function's ${timeout} s`,
  );
});

test('DescribeCluster gives up at its deadline with a message saying so', async () => {
  const { createServer } = await import('node:http');
  const server = createServer(() => {
    /* never answers */
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  const { describeCluster } = await import('../../../src/kube/eks.ts');
  try {
    await assert.rejects(
      describeCluster('c', 'eu-west-1', { accessKeyId: 'a', secretAccessKey: 's' }, { endpoint: `http://127.0.0.1:${port}`, timeoutMs: 50 }),
      /got no answer within 50 ms/,
    );
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
