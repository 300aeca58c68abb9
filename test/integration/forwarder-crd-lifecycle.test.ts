/**
 * Watches that follow the cluster, against a REAL kube-apiserver + etcd and a REAL SQS-compatible
 * broker (ElasticMQ): a forwarder started before the CRDs of its Gadget primary, its Part
 * related kind and its Cog owned kind exist is ready and forwards its other primary (Widget);
 * installing the CRDs makes it watch them (a Gadget, a Part labelled for it and a Cog it
 * controls are forwarded: `Added`, `Related`, `Owned`); deleting them makes
 * those streams wait (one WARN each, the `operless_forwarder_watch_streams` gauge says so)
 * while Widgets are still forwarded and the forwarder stays healthy and ready; re-installing
 * them makes it watch them again. Nothing restarts.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startBroker, startControlPlane, testCrd, waitUntil, type Broker, type ControlPlane } from '../../src/testing/index.ts';
import { startForwarder, type Forwarder } from '../../src/forwarder/forwarder.ts';
import { createSqsQueue } from '../../src/queue/sqs.ts';
import { createLogger } from '../../src/observability/log.ts';
import { KubeApiError } from '../../src/kube/api.ts';
import type { ReconcileMessage } from '../../src/contract/message.ts';
import { API_VERSION, GADGET_CRD, GROUP, Objects, WIDGET_CRD, collect, gadgetConfig, summary } from './forwarder-env.ts';

/** A namespaced kind related to Gadgets by the label `gadget` (the Gadget of that name in its namespace). */
const PART_CRD = testCrd({ group: GROUP, kind: 'Part' });
/** A namespaced kind owned by Gadgets (a Cog's controller owner reference names its Gadget). */
const COG_CRD = testCrd({ group: GROUP, kind: 'Cog' });
const LATE_CRDS = [GADGET_CRD, PART_CRD, COG_CRD];
const NS = 'crd-lifecycle';

let cp: ControlPlane;
let broker: Broker;
let objects: Objects;

before(async () => {
  [cp, broker] = await Promise.all([startControlPlane({ crds: [WIDGET_CRD] }), startBroker({ queues: [] })]);
  objects = new Objects(cp.kubeConfig);
  await objects.createNamespace(NS);
});
after(async () => {
  await Promise.all([cp?.stop(), broker?.stop()]);
});

async function gauge(forwarder: Forwarder, labels: Record<string, string>): Promise<number> {
  const m = (await forwarder.metrics.registry.getMetricsAsJSON()).find((x) => x.name === 'operless_forwarder_watch_streams');
  return (m?.values ?? []).filter((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val)).reduce((n, v) => n + v.value, 0);
}

async function deleteCrds(): Promise<void> {
  for (const crd of LATE_CRDS) await objects.api.requestJson('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`);
  await waitUntil(
    'the CRDs are gone',
    async () => {
      for (const crd of LATE_CRDS) {
        try {
          await objects.api.requestJson('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`);
          return false;
        } catch (err) {
          if (!(err instanceof KubeApiError) || err.status !== 404) throw err;
        }
      }
      return true;
    },
    { timeoutMs: 60_000 },
  );
}

async function createPart(name: string, gadget: string): Promise<void> {
  await objects.api.requestJson('POST', `/apis/${API_VERSION}/namespaces/${NS}/parts`, {
    body: { apiVersion: API_VERSION, kind: 'Part', metadata: { name, namespace: NS, labels: { gadget } }, spec: {} },
  });
}

async function createCog(name: string, gadget: Record<string, any>): Promise<void> {
  const owner = { apiVersion: API_VERSION, kind: 'Gadget', name: gadget.metadata.name, uid: gadget.metadata.uid, controller: true };
  await objects.api.requestJson('POST', `/apis/${API_VERSION}/namespaces/${NS}/cogs`, {
    body: { apiVersion: API_VERSION, kind: 'Cog', metadata: { name, namespace: NS, ownerReferences: [owner] }, spec: {} },
  });
}

const has = (messages: readonly ReconcileMessage[], pattern: RegExp): boolean => summary(messages).some((s) => pattern.test(s));

test('a CRD installed after start is watched, a deleted one waits while the other kinds go on, a re-installed one is watched again', {
  timeout: 240_000,
}, async () => {
  const queueUrl = await broker.createQueue({ name: NS });
  const base = gadgetConfig(queueUrl, broker.region, { watch: { backoffInitialMs: 100, backoffMaxMs: 1000 } });
  const lines: { msg: string; level: string; [k: string]: unknown }[] = [];
  const forwarder = startForwarder(
    {
      ...base,
      primaries: [
        { apiVersion: API_VERSION, kind: 'Gadget', plural: 'gadgets', namespaced: true, namespaces: [NS] },
        { apiVersion: API_VERSION, kind: 'Widget', plural: 'widgets', namespaced: false },
      ],
      owned: [{ apiVersion: API_VERSION, kind: 'Cog', plural: 'cogs', namespaced: true, namespaces: [NS] }],
      related: [
        {
          apiVersion: API_VERSION,
          kind: 'Part',
          plural: 'parts',
          namespaced: true,
          namespaces: [NS],
          for: [{ apiVersion: API_VERSION, kind: 'Gadget', label: 'gadget' }],
        },
      ],
    },
    {
      kubeConfig: cp.kubeConfig,
      queue: createSqsQueue({ queueUrl, region: broker.region, client: broker.sqs() }),
      logger: createLogger({ level: 'info', write: (line) => lines.push(JSON.parse(line)) }),
    },
  );
  try {
    // Not served at start: ready all the same (the other kinds are served), the missing ones waiting.
    await forwarder.ready;
    assert.deepEqual(forwarder.readiness(), { ok: true, reasons: [] });
    assert.equal(await gauge(forwarder, { kind: 'Gadget', state: 'waiting' }), 1);
    assert.equal(await gauge(forwarder, { kind: 'Part', role: 'related', state: 'waiting' }), 1);
    assert.equal(await gauge(forwarder, { kind: 'Cog', role: 'owned', state: 'waiting' }), 1);
    assert.equal(await gauge(forwarder, { kind: 'Widget', state: 'watching' }), 1);
    await objects.createWidget('w1');
    assert.ok(has(await collect(broker.sqs(), queueUrl, { until: (all) => has(all, /Widget\/\/w1$/) }), /Widget\/\/w1$/), 'the served primary is forwarded');
    // Several polls later: still one WARN per waiting kind, no storm.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const waitingWarnings = () => lines.filter((l) => l.level === 'warn' && /is not served/.test(l.msg)).map((l) => l.msg.split(' ')[0]);
    assert.deepEqual(waitingWarnings().sort(), ['Cog', 'Gadget', 'Part']);

    // Installed: watched without a restart; a Gadget, then a Part labelled for it (Related), are forwarded.
    await cp.installCrds(LATE_CRDS);
    const g1 = await objects.createGadget(NS, 'g1');
    const added = await collect(broker.sqs(), queueUrl, { until: (all) => has(all, /^Added Gadget\/crd-lifecycle\/g1$/) });
    assert.ok(has(added, /^Added Gadget\/crd-lifecycle\/g1$/), `the late primary is forwarded: ${summary(added).join(', ')}`);
    await waitUntil('the late related kind is watched', async () => (await gauge(forwarder, { kind: 'Part', state: 'watching' })) === 1, { timeoutMs: 30_000 });
    await createPart('p1', 'g1');
    const related = await collect(broker.sqs(), queueUrl, { until: (all) => has(all, /^Related Gadget\/crd-lifecycle\/g1$/) });
    assert.ok(has(related, /^Related Gadget\/crd-lifecycle\/g1$/), `the late related kind is forwarded: ${summary(related).join(', ')}`);
    await waitUntil('the late owned kind is watched', async () => (await gauge(forwarder, { kind: 'Cog', state: 'watching' })) === 1, { timeoutMs: 30_000 });
    await createCog('c1', g1);
    const owned = await collect(broker.sqs(), queueUrl, { until: (all) => has(all, /^Owned Gadget\/crd-lifecycle\/g1$/) });
    assert.ok(has(owned, /^Owned Gadget\/crd-lifecycle\/g1$/), `the late owned kind is forwarded to its owner: ${summary(owned).join(', ')}`);
    assert.equal(await gauge(forwarder, { kind: 'Gadget', state: 'watching' }), 1);
    assert.equal(await gauge(forwarder, { kind: 'Part', state: 'watching' }), 1);

    // Deleted: those streams wait again; Widgets are still forwarded; healthy and ready throughout.
    await deleteCrds();
    await waitUntil('the deleted kinds wait', async () => (await gauge(forwarder, { state: 'waiting' })) === 3, { timeoutMs: 30_000 });
    assert.deepEqual(forwarder.health(), { ok: true, reasons: [] });
    assert.deepEqual(forwarder.readiness(), { ok: true, reasons: [] });
    await objects.createWidget('w2');
    assert.ok(
      has(await collect(broker.sqs(), queueUrl, { until: (all) => has(all, /Widget\/\/w2$/) }), /Widget\/\/w2$/),
      'the other primary is still forwarded',
    );
    assert.deepEqual(waitingWarnings().sort(), ['Cog', 'Cog', 'Gadget', 'Gadget', 'Part', 'Part'], 'one WARN per kind per wait');

    // Re-installed: watched again.
    await cp.installCrds(LATE_CRDS);
    const g2 = await objects.createGadget(NS, 'g2');
    const again = await collect(broker.sqs(), queueUrl, { until: (all) => has(all, /Gadget\/crd-lifecycle\/g2$/) });
    assert.ok(has(again, /Gadget\/crd-lifecycle\/g2$/), `the re-installed primary is forwarded: ${summary(again).join(', ')}`);
    await waitUntil('the three kinds are watched again', async () => (await gauge(forwarder, { state: 'watching' })) === 4, { timeoutMs: 30_000 });
    // One at a time: two changes of g2's children inside one coalescing window merge into one message.
    await createPart('p2', 'g2');
    const relatedAgain = await collect(broker.sqs(), queueUrl, { until: (all) => has(all, /^Related Gadget\/crd-lifecycle\/g2$/) });
    assert.ok(has(relatedAgain, /^Related Gadget\/crd-lifecycle\/g2$/), `the re-installed related kind is forwarded: ${summary(relatedAgain).join(', ')}`);
    await createCog('c2', g2);
    const ownedAgain = await collect(broker.sqs(), queueUrl, { until: (all) => has(all, /^Owned Gadget\/crd-lifecycle\/g2$/) });
    assert.ok(has(ownedAgain, /^Owned Gadget\/crd-lifecycle\/g2$/), `the re-installed owned kind is forwarded: ${summary(ownedAgain).join(', ')}`);
    assert.equal(await gauge(forwarder, { state: 'waiting' }), 0);
    assert.ok(
      lines.some((l) => /Gadget is served again/.test(l.msg)),
      'the end of a wait is logged',
    );
    const otherWarnings = lines.filter((l) => (l.level === 'warn' || l.level === 'error') && !/is not served/.test(l.msg));
    assert.deepEqual(otherWarnings, [], 'no other warning or error: no storm of failed LISTs and WATCHes');
  } finally {
    await forwarder.stop({ graceMs: 2000 });
  }
});
