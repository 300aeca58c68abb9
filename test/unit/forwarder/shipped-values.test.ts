/**
 * The forwarder as shipped for the reference operator (infra/forwarder/example-values.yaml,
 * rendered into infra/forwarder/manifests/) watches exactly the Memcached controller's primary
 * kind, every kind it owns and every related kind it reads (with the same mapping): a kind left
 * out would mean its changes (a Service deleted by hand, an edited ConfigMap) reach the function
 * only through the periodic resync.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { EXAMPLE_VALUES } from '../../../src/build/forwarder-chart.ts';
import { memcachedController } from '../../../src/memcached/controller.ts';

interface Watch {
  apiVersion: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

interface Related extends Watch {
  for: { apiVersion: string; kind: string; field?: string; label?: string; namespace?: boolean }[];
}

const values = parse(readFileSync(EXAMPLE_VALUES, 'utf8')) as { primaries: Watch[]; owned: Watch[]; related?: Related[] };
const ref = (w: Watch) => `${w.apiVersion} ${w.kind} ${w.plural} ${w.namespaced ? 'namespaced' : 'cluster'}`;

test('the shipped values watch the Memcached kind and every kind its controller owns', () => {
  assert.deepEqual(values.primaries.map(ref), [ref(memcachedController)]);
  assert.deepEqual(values.owned.map(ref).sort(), (memcachedController.owns ?? []).map(ref).sort());
});

test('the shipped values watch every related kind the Memcached controller declares, with its mapping, and nothing more', () => {
  const shipped = (values.related ?? []).flatMap((w) =>
    w.for.map(
      (t) =>
        `${ref(w)} -> ${t.apiVersion} ${t.kind} ${JSON.stringify({ ...(t.field ? { field: t.field } : {}), ...(t.label ? { label: t.label } : {}), ...(t.namespace ? { namespace: true } : {}) })}`,
    ),
  );
  const declared = (memcachedController.watches ?? []).map(
    (w) => `${ref(w.kind)} -> ${memcachedController.apiVersion} ${memcachedController.kind} ${JSON.stringify(w.map)}`,
  );
  assert.ok(declared.length > 0, 'the reference operator declares a related watch');
  assert.deepEqual(shipped.sort(), declared.sort());
});
