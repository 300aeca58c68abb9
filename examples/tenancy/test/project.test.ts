/**
 * The project is wired together: every kind in operless.json has its function and queues in
 * serverless.yml, a CRD, RBAC, a sample, a sample SQS event and forwarder watches.
 * Fast, no cluster: it catches a half-done rename or a deleted file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';

const project = JSON.parse(readFileSync('operless.json', 'utf8')) as {
  apis: { group: string; kind: string; plural: string }[];
};
const serverless = readFileSync('serverless.yml', 'utf8');

test('serverless.yml is a complete osls service', () => {
  assert.match(serverless, /^service: /m);
  assert.match(serverless, /^functions:/m);
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
  });
}
