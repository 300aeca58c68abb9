import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultMemcached, memcachedWebhook, podCap } from '../../../src/memcached/webhook.ts';
import { toWebhookHandler } from '../../../src/core/webhook/webhook.ts';
import { generateCrd } from '../../../src/crd/generate.ts';
import { generateWebhookConfigurations } from '../../../src/crd/webhooks.ts';
import { MemcachedResource, type Memcached } from '../../../src/memcached/types.ts';
import { MemcachedV1beta1Resource } from '../../../src/memcached/v1beta1.ts';
import { silentLogger } from '../../../src/observability/log.ts';
import type { KubeClient } from '../../../src/kube/types.ts';

const mc = (spec: Partial<Memcached['spec']>): Memcached => ({
  apiVersion: 'cache.example.com/v1alpha1',
  kind: 'Memcached',
  metadata: { name: 'a', namespace: 'ns' },
  spec: { size: 1, image: 'memcached:1.6.38-alpine', port: 11211, memoryLimitMB: 64, ...spec },
});

test('defaulting sizes resources from memoryLimitMB only when none are given', () => {
  assert.deepEqual(defaultMemcached(mc({ memoryLimitMB: 100 })).spec.resources, { requests: { cpu: '100m', memory: '132Mi' }, limits: { memory: '132Mi' } });
  assert.deepEqual(defaultMemcached(mc({ resources: {} })).spec.resources, {});
});

test('podCap reads whole numbers only', () => {
  assert.equal(podCap('3'), 3);
  assert.equal(podCap(undefined), undefined);
  for (const bad of ['', '-1', '1.5', 'ten', '9999999']) assert.equal(podCap(bad), undefined);
});

test('conversion v1alpha1 ↔ v1beta1 renames spec.size ↔ spec.replicas and keeps every other field', async () => {
  const handler = toWebhookHandler(memcachedWebhook, { clients: (() => Promise.resolve({} as KubeClient)) as never, log: silentLogger });
  const alpha = { ...mc({ size: 4, resources: { limits: { memory: '1Gi' } } }), status: { readyReplicas: 2 } };
  const review = (objects: unknown[], desiredAPIVersion: string) => ({
    route: 'convert' as const,
    review: { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: { uid: 'u', desiredAPIVersion, objects } },
  });
  const beta = ((await handler(review([alpha], 'cache.example.com/v1beta1'))) as { review: { response: { convertedObjects: Record<string, unknown>[] } } })
    .review.response.convertedObjects[0];
  assert.deepEqual(beta, {
    ...alpha,
    apiVersion: 'cache.example.com/v1beta1',
    spec: { replicas: 4, image: alpha.spec.image, port: 11211, memoryLimitMB: 64, resources: { limits: { memory: '1Gi' } } },
  });
  const back = ((await handler(review([beta], 'cache.example.com/v1alpha1'))) as { review: { response: { convertedObjects: unknown[] } } }).review.response
    .convertedObjects[0];
  assert.deepEqual(back, alpha);
});

test('the CRD serves v1alpha1 (storage, hub) and v1beta1 with a conversion webhook; the configurations keep kube-system and the operator out', () => {
  const crd = generateCrd(MemcachedResource, {
    servedVersions: [MemcachedV1beta1Resource],
    conversion: { clientConfig: { url: 'https://x/memcached/convert' } },
  }) as { spec: { versions: { name: string; storage: boolean; served: boolean }[]; conversion: unknown } };
  assert.deepEqual(
    crd.spec.versions.map((v) => [v.name, v.served, v.storage]),
    [
      ['v1alpha1', true, true],
      ['v1beta1', true, false],
    ],
  );
  assert.deepEqual(crd.spec.conversion, {
    strategy: 'Webhook',
    webhook: { clientConfig: { url: 'https://x/memcached/convert' }, conversionReviewVersions: ['v1'] },
  });
  const [mutating, validating] = generateWebhookConfigurations({
    resource: MemcachedResource,
    operatorNamespace: 'ops',
    clientConfig: (r) => ({ url: r }),
    default: {},
    validate: { failurePolicy: 'Ignore', timeoutSeconds: 5 },
  }) as { kind: string; webhooks: Record<string, unknown>[] }[];
  assert.equal(mutating?.kind, 'MutatingWebhookConfiguration');
  assert.equal(validating?.kind, 'ValidatingWebhookConfiguration');
  const m = mutating?.webhooks[0] as Record<string, unknown>;
  assert.deepEqual(
    [m.name, m.failurePolicy, m.timeoutSeconds, m.sideEffects, m.matchPolicy],
    ['default.memcacheds.cache.example.com', 'Fail', 10, 'None', 'Equivalent'],
  );
  assert.deepEqual(m.namespaceSelector, { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'ops'] }] });
  assert.deepEqual((m.rules as { apiVersions: string[] }[])[0]?.apiVersions, ['v1alpha1']);
  assert.deepEqual([validating?.webhooks[0]?.failurePolicy, validating?.webhooks[0]?.timeoutSeconds], ['Ignore', 5]);
  assert.throws(
    () => generateWebhookConfigurations({ resource: MemcachedResource, operatorNamespace: 'ops', clientConfig: () => ({}), validate: { timeoutSeconds: 31 } }),
    /timeoutSeconds must be a whole number from 1 to 30/,
  );
  assert.throws(() => generateCrd(MemcachedResource, { servedVersions: [MemcachedResource] }), /must be another version/);
});

test('validation: an update that leaves the spec alone passes (finalizer writes), a deleting object is never blocked, a new problem is refused', async () => {
  const handler = toWebhookHandler(memcachedWebhook, {
    clients: (() => Promise.resolve({ get: () => Promise.resolve(undefined) } as unknown as KubeClient)) as never,
    log: silentLogger,
  });
  const bad = mc({ memoryLimitMB: 128, resources: { limits: { memory: '64Mi' } } });
  const review = (object: Memcached, oldObject?: Memcached) => ({
    route: 'validate' as const,
    review: {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u',
        kind: { group: 'cache.example.com', version: 'v1alpha1', kind: 'Memcached' },
        operation: oldObject ? 'UPDATE' : 'CREATE',
        name: 'a',
        namespace: 'ns',
        object,
        ...(oldObject ? { oldObject } : {}),
      },
    },
  });
  const allowed = async (r: ReturnType<typeof review>) => ((await handler(r)) as { review: { response: { allowed: boolean } } }).review.response.allowed;
  assert.equal(await allowed(review(bad)), false, 'a create with the problem is refused');
  assert.equal(
    await allowed(review({ ...bad, metadata: { ...bad.metadata, finalizers: ['cache.example.com/finalizer'] } }, bad)),
    true,
    'a finalizer added to a stored object with the problem passes',
  );
  assert.equal(
    await allowed(review({ ...bad, metadata: { ...bad.metadata, deletionTimestamp: '2026-12-02T00:00:00Z' }, spec: { ...bad.spec, size: 50 } }, bad)),
    true,
    'a deleting object is never blocked',
  );
  assert.equal(await allowed(review(bad, mc({}))), false, 'an update that introduces the problem is refused');
});
