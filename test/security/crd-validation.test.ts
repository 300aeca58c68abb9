/**
 * CRD validation, property-based, against the REAL API server: generated Memcached specs —
 * valid ones and ones with wrong types, out-of-range numbers, bad quantities, unpinned or
 * malformed images, unknown fields — are created with `dryRun=All` and strict field
 * validation (what `kubectl apply` does). The API server accepts exactly those the schema
 * in `infra/crds/` allows (a small independent model of that schema is the oracle) and
 * rejects the rest with a message naming an offending field. Bounded: 100 runs.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import fc from 'fast-check';
import { fcParameters } from '../support/fast-check.ts';
import { startControlPlane, type ControlPlane } from '../../src/testing/index.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const CRD = join(ROOT, 'infra/crds/memcacheds.cache.example.com.yaml');
const RUNS = Number(process.env.OPERLESS_CRD_FUZZ_RUNS ?? 100);

let cp: ControlPlane;
before(async () => {
  cp = await startControlPlane({ crds: [CRD] });
});
after(async () => {
  await cp?.stop();
});

/** A value with the model's verdict. */
interface Field {
  value: unknown;
  ok: boolean;
}
const good = (value: unknown): Field => ({ value, ok: true });
const bad = (value: unknown): Field => ({ value, ok: false });
const ABSENT = Symbol('absent');

const QUANTITY = /^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$/;
const quantity: fc.Arbitrary<Field> = fc.oneof(
  fc.constantFrom('100m', '1Gi', '64Mi', '0.5', '1e3', '2', '.5', '+1k').map(good),
  fc.integer({ min: 0, max: 1 << 20 }).map(good),
  fc.constantFrom('1GB', 'abc', '', '1.2.3', 'Mi', '1 Gi', '--1', '1Gi ').map(bad),
  fc.constantFrom(true, { a: 1 }, [1], 1.5).map(bad),
  fc.string({ maxLength: 6 }).map((s) => ({ value: s, ok: QUANTITY.test(s) })),
);

/** Per field: values the schema allows (ABSENT = field left out) and values it refuses. */
const FIELDS: Record<string, { path: string; valid: fc.Arbitrary<unknown>; invalid: fc.Arbitrary<unknown> }> = {
  size: {
    path: 'spec.size',
    valid: fc.integer({ min: 0, max: 100 }),
    invalid: fc.oneof(
      fc.integer({ min: -1000, max: -1 }),
      fc.integer({ min: 101, max: 1 << 30 }),
      fc.constantFrom<unknown>('3', 1.5, true, [3], { n: 3 }, ABSENT),
    ),
  },
  image: {
    path: 'spec.image',
    valid: fc.constantFrom<unknown>(ABSENT, 'memcached:1.6.38-alpine', 'registry.example.com/cache/memcached@sha256:abc', 'memcached'),
    invalid: fc.constantFrom<unknown>('memcached:latest', 'x:latest', '', 'has space', 'tab\there', 'x'.repeat(513), 7, false),
  },
  port: {
    path: 'spec.port',
    valid: fc.oneof(fc.constant<unknown>(ABSENT), fc.integer({ min: 1, max: 65535 })),
    invalid: fc.constantFrom<unknown>(0, -1, 65536, 2 ** 31, '11211', 1.5),
  },
  memoryLimitMB: {
    path: 'spec.memoryLimitMB',
    valid: fc.oneof(fc.constant<unknown>(ABSENT), fc.integer({ min: 16, max: 65536 })),
    invalid: fc.constantFrom<unknown>(15, 0, 65537, '64', 64.5),
  },
};
const validQuantities = fc.dictionary(
  fc.constantFrom('cpu', 'memory'),
  quantity.filter((q) => q.ok).map((q) => q.value),
  { maxKeys: 2 },
);
const invalidQuantity = quantity.filter((q) => !q.ok).map((q) => q.value);

interface Case {
  spec: unknown;
  ok: boolean;
  badPaths: string[];
}

const MUTATIONS = ['size', 'image', 'port', 'memoryLimitMB', 'quantity', 'resourcesType', 'unknown', 'unknownInResources'] as const;
const validSpec = fc
  .record({
    size: FIELDS.size!.valid,
    image: FIELDS.image!.valid,
    port: FIELDS.port!.valid,
    memoryLimitMB: FIELDS.memoryLimitMB!.valid,
    limits: fc.option(validQuantities, { nil: undefined }),
    requests: fc.option(validQuantities, { nil: undefined }),
  })
  .map(({ limits, requests, ...fields }) => {
    const spec: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(fields)) if (v !== ABSENT) spec[k] = v;
    if (limits || requests) spec.resources = { ...(limits ? { limits } : {}), ...(requests ? { requests } : {}) };
    return spec;
  });
/** One mutation of a valid spec, with the path the API server must name. */
const mutation = fc.constantFrom(...MUTATIONS).chain((m): fc.Arbitrary<[string, (spec: Record<string, unknown>) => void]> => {
  if (m in FIELDS) {
    const f = FIELDS[m]!;
    return f.invalid.map((v) => [
      f.path,
      (spec) => {
        if (v === ABSENT) delete spec[m];
        else spec[m] = v;
      },
    ]);
  }
  if (m === 'quantity') {
    return fc.tuple(fc.constantFrom('limits', 'requests'), fc.constantFrom('cpu', 'memory'), invalidQuantity).map(([which, k, v]) => [
      `spec.resources.${which}.${k}`,
      (spec) => {
        const r = (spec.resources ??= {}) as Record<string, unknown>;
        // An earlier mutation may have made the map a non-object: this one replaces it.
        const map = typeof r[which] === 'object' && r[which] !== null && !Array.isArray(r[which]) ? (r[which] as Record<string, unknown>) : {};
        map[k] = v;
        r[which] = map;
      },
    ]);
  }
  if (m === 'resourcesType') {
    return fc.tuple(fc.constantFrom('limits', 'requests'), fc.constantFrom<unknown>('1Gi', 5, ['cpu'])).map(([which, v]) => [
      `spec.resources.${which}`,
      (spec) => {
        spec.resources = { ...(spec.resources as object | undefined), [which]: v };
      },
    ]);
  }
  const inResources = m === 'unknownInResources';
  return fc.constantFrom('replicas', 'Size', 'imagePullPolicy').map((name) => [
    inResources ? `spec.resources.${name}` : `spec.${name}`,
    (spec) => {
      if (inResources) spec.resources = { ...(spec.resources as object | undefined), [name]: 1 };
      else spec[name] = 1;
    },
  ]);
});

const specCase: fc.Arbitrary<Case> = fc.oneof(
  { weight: 5, arbitrary: validSpec.map((spec) => ({ spec, ok: true, badPaths: [] })) },
  {
    weight: 6,
    arbitrary: fc.tuple(validSpec, fc.array(mutation, { minLength: 1, maxLength: 3 })).map(([spec, ms]) => {
      for (const [, apply] of ms) apply(spec);
      return { spec, ok: false, badPaths: ms.map(([p]) => p) };
    }),
  },
  { weight: 1, arbitrary: fc.constantFrom<unknown>('size: 3', [], 42).map((spec) => ({ spec, ok: false, badPaths: ['spec'] })) },
);

async function create(api: CustomObjectsApi, name: string, spec: unknown): Promise<{ ok: true } | { ok: false; message: string }> {
  try {
    await api.createNamespacedCustomObject({
      group: 'cache.example.com',
      version: 'v1alpha1',
      namespace: 'default',
      plural: 'memcacheds',
      body: { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name }, spec },
      dryRun: 'All',
      fieldValidation: 'Strict',
    });
    return { ok: true };
  } catch (err) {
    const e = err as { code?: number; body?: unknown; message?: string };
    assert.ok(e.code === 422 || e.code === 400, `a rejection is 400/422, got ${e.code}: ${e.message}`);
    const body = typeof e.body === 'string' ? (JSON.parse(e.body) as { message?: string }) : (e.body as { message?: string } | undefined);
    return { ok: false, message: body?.message ?? String(e.message) };
  }
}

test(`the API server accepts exactly the Memcached specs the CRD schema allows (${RUNS} generated specs)`, async () => {
  const api = cp.kubeConfig.makeApiClient(CustomObjectsApi);
  let n = 0;
  const tally = { accepted: 0, rejected: 0 };
  const samples: string[] = [];
  await fc.assert(
    fc.asyncProperty(specCase, async (c) => {
      const got = await create(api, `fuzz-${n++}`, c.spec);
      const shown = JSON.stringify(c.spec);
      if (c.ok) {
        assert.ok(got.ok, `a valid spec was rejected: ${shown}\n${got.ok ? '' : got.message}`);
        tally.accepted++;
      } else {
        assert.ok(!got.ok, `an invalid spec (${c.badPaths.join(', ')}) was accepted: ${shown}`);
        tally.rejected++;
        const named = c.badPaths.some((p) => got.message.includes(p) || got.message.includes(`"${p.split('.').pop()}"`));
        assert.ok(named, `the rejection names none of ${c.badPaths.join(', ')}: ${got.message}`);
        if (samples.length < 6) samples.push(`${shown}\n    → ${got.message.slice(0, 220)}`);
      }
    }),
    fcParameters({ numRuns: RUNS }),
  );
  console.log(`\nCRD validation: ${tally.accepted} valid specs accepted, ${tally.rejected} invalid specs rejected. Examples:\n  ${samples.join('\n  ')}`);
  assert.ok(tally.accepted > 5 && tally.rejected > 5, 'both kinds of spec were generated');
});
