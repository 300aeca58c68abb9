/**
 * The project is wired together: every kind in operless.json has its function and queues in
 * serverless.yml, a CRD, RBAC, a sample, a sample SQS event and forwarder watches, and the
 * scheduled resync function feeds its queue (an unordered kind's bulk queue: live changes never
 * wait behind a resync; a per-key kind has none, its order cannot span two queues).
 * Fast, no cluster: it catches a half-done rename or a deleted file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';

const project = JSON.parse(readFileSync('operless.json', 'utf8')) as {
  apis: { group: string; kind: string; plural: string; ordering?: string }[];
};
const serverless = readFileSync('serverless.yml', 'utf8');
const resync = readFileSync('functions/resync.ts', 'utf8');

test('serverless.yml is a complete osls service with the scheduled resync function', () => {
  assert.match(serverless, /^service: /m);
  assert.match(serverless, /^functions:/m);
  assert.ok(serverless.includes('handler: functions/resync.handler'), 'the resync function is declared');
  assert.ok(serverless.includes('rate: ${param:resyncSchedule}'), 'on a schedule');
});

for (const api of project.apis) {
  const file = api.kind.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
  test(`${api.kind}: function, queues, CRD, RBAC, sample, event and watches are in place`, () => {
    assert.ok(serverless.includes(`handler: functions/${file}.handler`), 'serverless.yml declares its function');
    assert.ok(serverless.includes(`${api.kind}WorkQueue:`) && serverless.includes(`${api.kind}DeadLetterQueue:`), 'its queues');
    for (const path of [
      `functions/${file}.ts`, `src/${file}/types.ts`, `src/${file}/controller.ts`,
      `infra/crds/${api.plural}.${api.group}.yaml`, `infra/rbac/${file}-function.yaml`,
      `infra/samples/${file}.yaml`, `events/${file}-added.json`,
    ]) {
      assert.ok(existsSync(path), `${path} exists`);
    }
    assert.ok(readFileSync('infra/forwarder/watches.yaml', 'utf8').includes(`kind: ${api.kind}`), 'the forwarder watches it');
    const variable = `${file.replace(/-/g, '_').toUpperCase()}_QUEUE_URL`;
    assert.ok(resync.includes(`queueUrlVariable: '${variable}'`), 'functions/resync.ts resyncs it');
    assert.ok(serverless.includes(`${variable}: !Ref ${api.kind}WorkQueue`), 'the resync function gets its queue URL');
    const bulk = `${file.replace(/-/g, '_').toUpperCase()}_BULK_QUEUE_URL`;
    if (api.ordering === 'per-key') {
      assert.ok(!serverless.includes(`${api.kind}BulkQueue:`), 'per-key: no bulk queue');
    } else {
      assert.ok(serverless.includes(`${api.kind}BulkQueue:`) && serverless.includes(`arn: !GetAtt ${api.kind}BulkQueue.Arn`), 'its bulk queue and its event source');
      assert.ok(resync.includes(`bulkQueueUrlVariable: '${bulk}'`) && serverless.includes(`${bulk}: !Ref ${api.kind}BulkQueue`), 'the resync sends to its bulk queue');
    }
  });
}
