/**
 * The Tenant controller against a real kube-apiserver + etcd (the Operless test environment,
 * binaries cached in ~/.cache/operless): the CRD installs, the sample applies, and the
 * reconcile handler — invoked with the sample SQS event, under the function's own RBAC —
 * sets the Ready condition.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { Context, SQSEvent } from 'aws-lambda';
import { createClientFactory, createEmfMetrics, createLogger, defineController, toSqsHandler, type MessageSender, type OutgoingMessage } from 'operless';
import { startControlPlane, type ControlPlane } from 'operless/testing';
import { tenantController } from '../src/tenant/controller.ts';

let cp: ControlPlane;

before(async () => {
  cp = await startControlPlane({ crds: ['infra/crds/tenants.tenancy.example.com.yaml'] });
});
after(async () => {
  await cp?.stop();
});

test('the handler reconciles the sample Tenant: Ready=True with observedGeneration', async () => {
  for (const file of ['infra/rbac/tenant-function.yaml', 'infra/samples/tenant.yaml']) {
    const applied = await cp.kubectl(['apply', '-f', file]);
    assert.equal(applied.code, 0, applied.stderr);
  }
  // The function's identity: a user in the group its RBAC binds.
  const identity = await cp.identity('tenant-function', ['tenancy-operator:tenant']);
  const sent: OutgoingMessage[] = [];
  const sender: MessageSender = { send: async (_queueUrl, message) => void sent.push(message) };
  const handler = toSqsHandler(defineController(tenantController), {
    queueUrl: 'http://localhost/queue/work',
    deadLetterQueueUrl: 'http://localhost/queue/dlq',
    cluster: 'default',
    clients: createClientFactory({ sources: { default: { type: 'file', path: identity.kubeconfigPath } }, env: {} }),
    sender,
    log: createLogger({ level: 'warn' }),
    metrics: createEmfMetrics({ write: () => {} }),
  });

  const event = JSON.parse(readFileSync('events/tenant-added.json', 'utf8')) as SQSEvent;
  const context = { awsRequestId: 'test', functionName: 'tenant', getRemainingTimeInMillis: () => 60_000 } as unknown as Context;
  const response = await handler(event, context);
  assert.deepEqual(response.batchItemFailures, []);
  assert.deepEqual(sent, [], 'nothing was requeued or dead-lettered');

  const got = await cp.kubectl(['get', 'tenants.tenancy.example.com', 'tenant-sample', '-o', 'json']);
  assert.equal(got.code, 0, got.stderr);
  const object = JSON.parse(got.stdout);
  const ready = object.status?.conditions?.find((c: { type: string }) => c.type === 'Ready');
  assert.equal(ready?.status, 'True', JSON.stringify(object.status));
  assert.equal(ready?.observedGeneration, object.metadata.generation);
  assert.equal(object.status.namespace, 'tenant-sample');

  // Filled in by hand: the namespace and its quota, owned by the Tenant.
  const ns = JSON.parse((await cp.kubectl(['get', 'namespace', 'tenant-sample', '-o', 'json'])).stdout);
  assert.equal(ns.metadata.ownerReferences?.[0]?.uid, object.metadata.uid);
  assert.equal(ns.metadata.annotations['tenancy.example.com/owner'], 'team-a@example.com');
  const quota = JSON.parse((await cp.kubectl(['get', 'resourcequota', 'tenant-quota', '-n', 'tenant-sample', '-o', 'json'])).stdout);
  assert.deepEqual(quota.spec.hard, { pods: '20', 'requests.cpu': '4', 'requests.memory': '8Gi' });
});
