/**
 * The local Lambda runner against real queues: the broker from the test harness (ElasticMQ)
 * and the embedded queue. Handlers succeed, report partial failures, throw, time out or answer
 * nonsense; the tests check what was deleted, what came back with a higher receive count, and
 * what the redrive policy moved to the DLQ.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SendMessageCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { startLambdaRunner, type InvocationReport, type LambdaRunnerOptions } from '../../src/local/lambda-runner.ts';
import { silentLogger } from '../../src/observability/log.ts';
import { createQueuePair, describeOnEachQueue } from './queue-targets.ts';

/** A queue redriving to its DLQ after `maxReceiveCount` receives. */
function createQueues(sqs: SQSClient, visibilityTimeoutSeconds: number, maxReceiveCount: number) {
  return createQueuePair(sqs, { visibilityTimeoutSeconds, maxReceiveCount });
}

async function send(sqs: SQSClient, url: string, bodies: readonly string[]) {
  for (let i = 0; i < bodies.length; i += 10) {
    const sent = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: bodies
          .slice(i, i + 10)
          .map((body, index) => ({ Id: `m${index}`, MessageBody: body, MessageAttributes: { source: { DataType: 'String', StringValue: 'test' } } })),
      }),
    );
    assert.equal(sent.Failed?.length ?? 0, 0);
  }
}

async function depth(sqs: SQSClient, url: string): Promise<number> {
  const attributes =
    (
      await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: url,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
        }),
      )
    ).Attributes ?? {};
  return (
    Number(attributes.ApproximateNumberOfMessages) +
    Number(attributes.ApproximateNumberOfMessagesNotVisible) +
    Number(attributes.ApproximateNumberOfMessagesDelayed)
  );
}

async function dlqBodies(sqs: SQSClient, dlqUrl: string): Promise<string[]> {
  const result = await sqs.send(new ReceiveMessageCommand({ QueueUrl: dlqUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }));
  return (result.Messages ?? []).map((m) => m.Body!).sort();
}

/** Polls `check` until it returns true; fails with `what` after `seconds`. */
async function eventually(what: string, check: () => Promise<boolean> | boolean, seconds = 30): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  assert.fail(`timed out after ${seconds} s waiting until ${what}`);
}

/** Established TCP connections (from any local socket) to a loopback port, from /proc/net/tcp{,6}. */
function connectionsTo(port: number): number {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  return ['/proc/net/tcp', '/proc/net/tcp6'].reduce(
    (n, file) =>
      n +
      readFileSync(file, 'utf8')
        .split('\n')
        .slice(1)
        .filter((line) => {
          const [, , remote, state] = line.trim().split(/\s+/);
          return state === '01' && remote?.endsWith(`:${hex}`);
        }).length,
    0,
  );
}

/** Seen records by body: the receive counts of each delivery, in order. */
function recorder() {
  const seen = new Map<string, number[]>();
  const events: SQSEvent[] = [];
  return {
    seen,
    events,
    record(event: SQSEvent) {
      events.push(event);
      for (const r of event.Records) seen.set(r.body, [...(seen.get(r.body) ?? []), Number(r.attributes.ApproximateReceiveCount)]);
    },
  };
}

describeOnEachQueue('lambda runner', (client) => {
  let sqs: SQSClient;
  before(() => {
    sqs = client();
  });

  const run = (options: Omit<LambdaRunnerOptions, 'sqs' | 'logger'>) => startLambdaRunner({ sqs, logger: silentLogger, timeoutSeconds: 5, ...options });

  test('records reported in batchItemFailures come back with higher receive counts until redrive; the others are deleted once', async () => {
    // The visibility timeout must outlast gathering and handling a batch (AWS: 6x the
    // timeout plus the window); with a window of 0 and a fast handler, 2 s is plenty.
    const { url, dlqUrl, arn } = await createQueues(sqs, 2, 3);
    await send(sqs, url, ['ok-1', 'ok-2', 'fail-1', 'ok-3']);
    const seen = recorder();
    const reports: InvocationReport[] = [];
    const runner = await run({
      queueUrl: url,
      batchSize: 10,
      batchWindowSeconds: 0,
      timeoutSeconds: 1,
      handler: async (event) => {
        seen.record(event);
        return { batchItemFailures: event.Records.filter((r) => r.body.startsWith('fail')).map((r) => ({ itemIdentifier: r.messageId })) };
      },
      onInvoke: (report) => reports.push(report),
    });
    try {
      await eventually('the failing record is in the DLQ', async () => (await dlqBodies(sqs, dlqUrl)).includes('fail-1'));
      await eventually('the work queue is empty', async () => (await depth(sqs, url)) === 0);
    } finally {
      await runner.stop();
    }
    assert.deepEqual(seen.seen.get('fail-1'), [1, 2, 3]);
    for (const body of ['ok-1', 'ok-2', 'ok-3']) assert.deepEqual(seen.seen.get(body), [1], `${body} delivered once`);
    assert.deepEqual(await dlqBodies(sqs, dlqUrl), ['fail-1']);
    assert.ok(reports.every((r) => r.outcome === 'partial' || r.outcome === 'success'));
    assert.equal(runner.stats.recordsDeleted, 3);
    assert.equal(runner.stats.recordsRetried, 3);
    const record: SQSRecord = seen.events[0]!.Records[0]!;
    assert.equal(record.eventSource, 'aws:sqs');
    assert.equal(record.eventSourceARN, arn);
    assert.equal(runner.eventSourceARN, arn);
    assert.equal(record.awsRegion, await sqs.config.region());
    assert.equal(record.messageAttributes.source?.stringValue, 'test');
    assert.equal(record.messageAttributes.source?.dataType, 'String');
    assert.match(record.md5OfBody, /^[0-9a-f]{32}$/);
    assert.ok(Number(record.attributes.SentTimestamp) > 0);
    assert.ok(Number(record.attributes.ApproximateFirstReceiveTimestamp) >= Number(record.attributes.SentTimestamp));
  });

  test('a handler that throws deletes nothing: the batch comes back and the redrive policy takes it', async () => {
    const { url, dlqUrl } = await createQueues(sqs, 2, 2);
    await send(sqs, url, ['throw-1', 'throw-2']);
    const seen = recorder();
    const reports: InvocationReport[] = [];
    const runner = await run({
      queueUrl: url,
      batchSize: 10,
      batchWindowSeconds: 1,
      timeoutSeconds: 1,
      handler: async (event) => {
        seen.record(event);
        throw new Error('reconcile exploded');
      },
      onInvoke: (report) => reports.push(report),
    });
    try {
      await eventually('both records are in the DLQ', async () => (await dlqBodies(sqs, dlqUrl)).length === 2);
    } finally {
      await runner.stop();
    }
    assert.deepEqual(seen.seen.get('throw-1'), [1, 2]);
    assert.deepEqual(seen.seen.get('throw-2'), [1, 2]);
    assert.ok(reports.length > 0);
    for (const report of reports) {
      assert.equal(report.outcome, 'error');
      assert.deepEqual(report.deleted, []);
      assert.equal(report.error, 'reconcile exploded');
    }
    assert.equal(runner.stats.recordsDeleted, 0);
  });

  test('a handler that runs past the timeout deletes nothing; the record is delivered again', async () => {
    const { url } = await createQueues(sqs, 2, 5);
    await send(sqs, url, ['slow']);
    const seen = recorder();
    const reports: InvocationReport[] = [];
    const runner = await run({
      queueUrl: url,
      timeoutSeconds: 1,
      handler: async (event, context) => {
        seen.record(event);
        const first = event.Records[0]!.attributes.ApproximateReceiveCount === '1';
        assert.ok(context.getRemainingTimeInMillis() <= 1000);
        if (first) await new Promise((resolve) => setTimeout(resolve, 1500));
      },
      onInvoke: (report) => reports.push(report),
    });
    try {
      await eventually('the second delivery succeeded', () => reports.some((r) => r.outcome === 'success'));
    } finally {
      await runner.stop();
    }
    assert.deepEqual(
      reports.map((r) => r.outcome),
      ['timeout', 'success'],
    );
    assert.match(reports[0]!.error ?? '', /Task timed out after 1\.00 seconds/);
    assert.deepEqual(seen.seen.get('slow'), [1, 2]);
    await eventually('the queue is empty', async () => (await depth(sqs, url)) === 0);
  });

  test('an itemIdentifier that is not in the batch fails the whole batch, as AWS documents', async () => {
    const { url } = await createQueues(sqs, 1, 5);
    await send(sqs, url, ['a']);
    // timeout 1 s = visibility 1 s: the minimum Lambda accepts.
    const reports: InvocationReport[] = [];
    let calls = 0;
    const runner = await run({
      queueUrl: url,
      timeoutSeconds: 1,
      handler: async () => {
        calls++;
        return calls === 1 ? { batchItemFailures: [{ itemIdentifier: 'no-such-message' }] } : undefined;
      },
      onInvoke: (report) => reports.push(report),
    });
    try {
      await eventually('the record was delivered twice', () => reports.length >= 2);
    } finally {
      await runner.stop();
    }
    assert.equal(reports[0]?.outcome, 'invalid-response');
    assert.deepEqual(reports[0]?.deleted, []);
    assert.equal(reports[1]?.outcome, 'success');
  });

  test('batchSize caps records per invocation and maxConcurrency caps concurrent invocations', async () => {
    const { url } = await createQueues(sqs, 30, 5);
    const bodies = Array.from({ length: 12 }, (_, i) => `m-${i}`);
    await send(sqs, url, bodies);
    const seen = recorder();
    let active = 0;
    let maxActive = 0;
    const runner = await run({
      queueUrl: url,
      batchSize: 3,
      batchWindowSeconds: 1,
      maxConcurrency: 2,
      handler: async (event) => {
        active++;
        maxActive = Math.max(maxActive, active);
        seen.record(event);
        await new Promise((resolve) => setTimeout(resolve, 100));
        active--;
      },
    });
    try {
      await eventually('every message was processed', () => seen.seen.size === 12);
      await eventually('the queue is empty', async () => (await depth(sqs, url)) === 0);
    } finally {
      await runner.stop();
    }
    assert.ok(seen.events.every((e) => e.Records.length >= 1 && e.Records.length <= 3));
    assert.ok(maxActive <= 2, `saw ${maxActive} concurrent invocations`);
    assert.deepEqual([...seen.seen.keys()].sort(), [...bodies].sort());
  });

  test('a handler loaded from an .mjs module runs, and stop() waits for the invocation in flight', async () => {
    const { url } = await createQueues(sqs, 30, 5);
    const dir = mkdtempSync(join(tmpdir(), 'operless-runner-'));
    const module = join(dir, 'bundle.mjs');
    writeFileSync(
      module,
      [
        'export const handler = async (event, context) => {',
        '  await new Promise((resolve) => setTimeout(resolve, 300));',
        '  globalThis.__operlessRunnerTest = { records: event.Records.length, requestId: context.awsRequestId };',
        '  return { batchItemFailures: [] };',
        '};',
      ].join('\n'),
    );
    let started!: () => void;
    const invoked = new Promise<void>((resolve) => {
      started = resolve;
    });
    const reports: InvocationReport[] = [];
    const runner = await run({ queueUrl: url, handler: { module, export: 'handler' }, onInvoke: (report) => reports.push(report) });
    await send(sqs, url, ['one']);
    const poll = setInterval(() => {
      if (runner.stats.inFlight > 0) started();
    }, 10);
    await invoked;
    clearInterval(poll);
    await runner.stop();
    assert.equal(reports.length, 1, 'stop() resolved only after the in-flight invocation finished');
    assert.equal(reports[0]?.outcome, 'success');
    const result = (globalThis as { __operlessRunnerTest?: { records: number; requestId: string } }).__operlessRunnerTest;
    assert.equal(result?.records, 1);
    assert.equal(result?.requestId, reports[0]?.requestId);
    assert.equal(await depth(sqs, url), 0);
  });
  test("pollers use connections of their own: with more pollers than the SDK has sockets, the caller's client still sends at once", async () => {
    // 60 pollers long-poll an empty queue (each holds a request for 20 s). Had they shared the
    // caller's client (50 sockets by default), this send would queue behind them until a long
    // poll returned empty. So: the send must complete while every long poll is still waiting —
    // an order of events, not a race against a clock.
    const idle = await createQueues(sqs, 30, 5);
    const other = await createQueues(sqs, 30, 5);
    const runner = await run({ queueUrl: idle.url, maxConcurrency: 60, handler: async () => undefined });
    try {
      // Every long poll on the wire: 60 connections to the queue's port (more than the 50
      // sockets a shared client would have), each with its ReceiveMessage pending.
      const { port } = new URL(idle.url);
      await eventually('all 60 long polls hold a connection of their own', () => runner.stats.receivesPending === 60 && connectionsTo(Number(port)) >= 60);
      const answeredBefore = runner.stats.receivesAnswered;
      await send(sqs, other.url, ['not starved']);
      assert.equal(
        runner.stats.receivesAnswered,
        answeredBefore,
        "the send on the caller's client went out only after one of the runner's long polls returned",
      );
      assert.equal(runner.stats.receivesPending, 60, 'every long poll was still waiting when the send completed');
    } finally {
      await runner.stop();
    }
  });

  test('FIFO: a group is consumed in order; a failed record keeps the later ones of its group even when the handler acknowledged them', async () => {
    const url = (
      await sqs.send(new CreateQueueCommand({ QueueName: `f-${randomUUID().slice(0, 8)}.fifo`, Attributes: { FifoQueue: 'true', VisibilityTimeout: '1' } }))
    ).QueueUrl!;
    const bodies = ['a1', 'a2', 'a3', 'b1'];
    for (const body of bodies) {
      await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body, MessageGroupId: body[0]!, MessageDeduplicationId: randomUUID() }));
    }
    const batches: string[][] = [];
    let failedOnce = false;
    const runner = await run({
      queueUrl: url,
      maxConcurrency: 1,
      batchSize: 10,
      // Fails a2 once and (against Lambda's rule) acknowledges what follows it.
      handler: async (event: SQSEvent) => {
        batches.push(event.Records.map((r) => r.body));
        const a2 = event.Records.find((r) => r.body === 'a2');
        if (a2 && !failedOnce) {
          failedOnce = true;
          return { batchItemFailures: [{ itemIdentifier: a2.messageId }] };
        }
        return { batchItemFailures: [] };
      },
    });
    try {
      await eventually('the FIFO queue is drained', async () => (await depth(sqs, url)) === 0, 30);
    } finally {
      await runner.stop();
    }
    const seen = batches.flat();
    assert.ok(
      seen.lastIndexOf('a1') < seen.lastIndexOf('a2') && seen.lastIndexOf('a2') < seen.lastIndexOf('a3'),
      `group a handled for good in order: ${JSON.stringify(batches)}`,
    );
    const failedIn = batches.findIndex((b) => b.includes('a2'));
    if (batches[failedIn]!.includes('a3')) {
      assert.ok(
        batches.slice(failedIn + 1).some((b) => b.includes('a3')),
        `a3 followed the failed a2 in its batch, so it came again: ${JSON.stringify(batches)}`,
      );
    }
    assert.equal(seen.filter((b) => b === 'b1').length, 1, 'the other group is not held back');
  });
});
