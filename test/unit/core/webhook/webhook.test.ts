import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeReview, type WebhookInvocation } from '../../../../src/core/webhook/admission.ts';
import { defineWebhook, toWebhookHandler, type WebhookResult } from '../../../../src/core/webhook/webhook.ts';
import type { KubeClient, KubeObject } from '../../../../src/kube/types.ts';
import { silentLogger } from '../../../../src/observability/log.ts';

const HUB = 'test.operless.dev/v1';
const SPOKE = 'test.operless.dev/v2';
const noClient = (() => Promise.resolve({} as KubeClient)) as never;

const widget = (spec: Record<string, unknown>, apiVersion = HUB): KubeObject => ({
  apiVersion,
  kind: 'Widget',
  metadata: { name: 'w', namespace: 'ns' },
  spec,
});

function admissionReview(object: KubeObject | undefined, extra: Record<string, unknown> = {}) {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'uid-1',
      kind: { group: 'test.operless.dev', version: 'v1', kind: 'Widget' },
      operation: 'CREATE',
      name: 'w',
      namespace: 'ns',
      object,
      ...extra,
    },
  };
}

const webhook = defineWebhook({
  apiVersion: HUB,
  kind: 'Widget',
  default: (w) => {
    (w.spec as Record<string, unknown>).color ??= 'blue';
    return w;
  },
  validate: (w) =>
    ((w.spec as { size?: number }).size ?? 0) > 5 ? { allowed: false, message: 'spec.size must be at most 5' } : { allowed: true, warnings: ['size is fine'] },
  conversion: {
    spokes: {
      [SPOKE]: {
        toHub: (o) => ({ ...o, spec: { size: (o.spec as { count: number }).count } }),
        fromHub: (o) => ({ ...o, spec: { count: (o.spec as { size: number }).size } }),
      },
    },
  },
});
const handler = toWebhookHandler(webhook, { clients: noClient, log: silentLogger });
const invoke = (route: WebhookInvocation['route'], review: unknown): Promise<WebhookResult> =>
  handler({ route, review }, { getRemainingTimeInMillis: () => 5000, awsRequestId: 'r' });
const responseOf = (result: WebhookResult) => {
  assert.ok('review' in result, `expected a review, got ${JSON.stringify(result)}`);
  return (result.review as { response: Record<string, unknown> }).response;
};

test('decodeReview never throws on hostile input and names the problem', () => {
  fc.assert(
    fc.property(fc.anything(), (value) => {
      const decoded = decodeReview(value);
      if (decoded.type === 'invalid') assert.equal(typeof decoded.problem, 'string');
    }),
    { numRuns: 1000 },
  );
  fc.assert(
    fc.property(fc.jsonValue(), (value) => {
      decodeReview({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: value });
      decodeReview({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: { uid: 'u', desiredAPIVersion: HUB, objects: value } });
    }),
    { numRuns: 500 },
  );
  assert.match(
    (decodeReview({ kind: 'AdmissionReview', apiVersion: 'admission.k8s.io/v1beta1' }) as { problem: string }).problem,
    /must be admission\.k8s\.io\/v1/,
  );
  assert.match((decodeReview(admissionReview(undefined, { uid: '' })) as { problem: string }).problem, /request\.uid/);
  assert.match((decodeReview({ kind: 'constructor', apiVersion: 'x' }) as { problem: string }).problem, /AdmissionReview or ConversionReview/);
  assert.match((decodeReview(admissionReview(widget({}), { object: { apiVersion: 5 } })) as { problem: string }).problem, /request\.object/);
});

test("defaulting answers with a JSON patch from the request object to the handler's object", async () => {
  const response = responseOf(await invoke('default', admissionReview(widget({ size: 1 }))));
  assert.equal(response.uid, 'uid-1');
  assert.equal(response.allowed, true);
  assert.equal(response.patchType, 'JSONPatch');
  assert.deepEqual(JSON.parse(Buffer.from(response.patch as string, 'base64').toString()), [{ op: 'add', path: '/spec/color', value: 'blue' }]);
  const unchanged = responseOf(await invoke('default', admissionReview(widget({ size: 1, color: 'red' }))));
  assert.equal(unchanged.patch, undefined);
});

test("validation denies with the handler's message (naming the object) and passes warnings", async () => {
  const denied = responseOf(await invoke('validate', admissionReview(widget({ size: 9 }))));
  assert.equal(denied.allowed, false);
  assert.deepEqual(denied.status, { code: 422, reason: 'Invalid', message: 'Widget ns/w: spec.size must be at most 5' });
  const allowed = responseOf(await invoke('validate', admissionReview(widget({ size: 1 }))));
  assert.equal(allowed.allowed, true);
  assert.deepEqual(allowed.warnings, ['size is fine']);
});

test('a handler that throws, runs past its deadline or patches outside spec/labels/annotations denies with a message', async () => {
  const failing = toWebhookHandler(
    defineWebhook({
      apiVersion: HUB,
      kind: 'Widget',
      default: (w) => ({ ...w, status: { hacked: true } }),
      validate: () => new Promise(() => {}),
    }),
    { clients: noClient, log: silentLogger, reserveMs: 10 },
  );
  const outside = responseOf(
    await failing({ route: 'default', review: admissionReview(widget({})) }, { getRemainingTimeInMillis: () => 5000, awsRequestId: 'r' }),
  );
  assert.equal(outside.allowed, false);
  assert.match((outside.status as { message: string }).message, /changed \/status.*only spec, metadata\.labels and metadata\.annotations/);
  const slow = responseOf(await failing({ route: 'validate', review: admissionReview(widget({})) }, { getRemainingTimeInMillis: () => 60, awsRequestId: 'r' }));
  assert.equal(slow.allowed, false);
  assert.match((slow.status as { message: string }).message, /did not answer in time/);
  const throwing = toWebhookHandler(
    defineWebhook({
      apiVersion: HUB,
      kind: 'Widget',
      validate: () => {
        throw new Error('boom');
      },
    }),
    { clients: noClient, log: silentLogger },
  );
  const thrown = responseOf(await throwing({ route: 'validate', review: admissionReview(widget({})) }));
  assert.match((thrown.status as { message: string }).message, /the validate webhook of Widget ns\/w failed: boom/);
});

test("a handler that reads nothing needs no Kubernetes configuration; one that reads gets the configuration's error in the review", async () => {
  const noConfig = (() => Promise.reject(new Error('no kubeconfig: set OPERLESS_KUBECONFIG'))) as never;
  const quiet = toWebhookHandler(defineWebhook({ apiVersion: HUB, kind: 'Widget', validate: () => ({ allowed: true }) }), {
    clients: noConfig,
    log: silentLogger,
  });
  assert.equal(responseOf(await quiet({ route: 'validate', review: admissionReview(widget({})) })).allowed, true);
  const reader = toWebhookHandler(
    defineWebhook({
      apiVersion: HUB,
      kind: 'Widget',
      validate: async (_w, ctx) => {
        await ctx.client.get({ apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false }, 'ns');
        return { allowed: true };
      },
    }),
    { clients: noConfig, log: silentLogger },
  );
  const denied = responseOf(await reader({ route: 'validate', review: admissionReview(widget({})) }));
  assert.equal(denied.allowed, false);
  assert.match((denied.status as { message: string }).message, /failed: no kubeconfig: set OPERLESS_KUBECONFIG/);
});

test('conversion goes through the hub both ways, keeps metadata and fails the review with a message for unknown versions', async () => {
  const review = (objects: unknown[], desiredAPIVersion: string) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'ConversionReview',
    request: { uid: 'c1', desiredAPIVersion, objects },
  });
  const toSpoke = responseOf(await invoke('convert', review([widget({ size: 3 })], SPOKE)));
  assert.deepEqual(toSpoke.result, { status: 'Success' });
  assert.deepEqual(toSpoke.convertedObjects, [widget({ count: 3 }, SPOKE)]);
  const toHub = responseOf(await invoke('convert', review([widget({ count: 4 }, SPOKE)], HUB)));
  assert.deepEqual(toHub.convertedObjects, [widget({ size: 4 })]);
  const unknown = responseOf(await invoke('convert', review([widget({ size: 1 })], 'test.operless.dev/v9')));
  assert.equal((unknown.result as { status: string }).status, 'Failure');
  assert.match((unknown.result as { message: string }).message, /no conversion between test\.operless\.dev\/v9 and the hub/);
});

test('a spoke that returns no object fails the conversion instead of dropping the spec', async () => {
  const careless = toWebhookHandler(
    defineWebhook({ apiVersion: HUB, kind: 'Widget', conversion: { spokes: { [SPOKE]: { toHub: (o) => o, fromHub: () => undefined as never } } } }),
    { clients: noClient, log: silentLogger },
  );
  const result = await careless({
    route: 'convert',
    review: {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'ConversionReview',
      request: { uid: 'c', desiredAPIVersion: SPOKE, objects: [widget({ size: 1 })] },
    },
  });
  const response = responseOf(result);
  assert.deepEqual(response.result, { status: 'Failure', message: `Widget ns/w: the conversion ${HUB} → ${SPOKE} returned undefined, not an object` });
});

test('a review on the wrong route or an unknown route is refused as a problem, not a crash', async () => {
  assert.match(
    ((await invoke('convert', admissionReview(widget({})) as never)) as { problem: string }).problem,
    /AdmissionReview was sent to the conversion webhook/,
  );
  assert.match(((await handler({ route: 'nuke' as never, review: {} })) as { problem: string }).problem, /unknown webhook route/);
  assert.match(((await handler(null as never)) as { problem: string }).problem, /unknown webhook route/);
});

test('defineWebhook refuses a spec that cannot work, naming the field', () => {
  assert.throws(() => defineWebhook({ apiVersion: 'v1', kind: 'Widget', default: (w) => w }), /hub \(storage\) version of a custom resource/);
  assert.throws(() => defineWebhook({ apiVersion: HUB, kind: 'Widget' }), /at least one of default, validate, conversion/);
  assert.throws(
    () => defineWebhook({ apiVersion: HUB, kind: 'Widget', conversion: { spokes: { 'other.dev/v2': { toHub: (o) => o, fromHub: (o) => o } } } }),
    /spoke other\.dev\/v2 must be another version/,
  );
});
