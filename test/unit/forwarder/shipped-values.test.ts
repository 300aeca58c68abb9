/**
 * The forwarder as shipped for the reference operator (infra/forwarder/example-values.yaml,
 * rendered into infra/forwarder/manifests/) watches exactly the Memcached controller's primary
 * kind and every kind it owns: an owned kind left out would mean its changes (a Service
 * deleted by hand) reach the function only through the periodic resync.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { EXAMPLE_VALUES } from '../../../src/build/forwarder-chart.ts';
import { memcachedController } from '../../../src/memcached/controller.ts';

interface Watch { apiVersion: string; kind: string; plural: string; namespaced: boolean }

const values = parse(readFileSync(EXAMPLE_VALUES, 'utf8')) as { primaries: Watch[]; owned: Watch[] };
const ref = (w: Watch) => `${w.apiVersion} ${w.kind} ${w.plural} ${w.namespaced ? 'namespaced' : 'cluster'}`;

test('the shipped values watch the Memcached kind and every kind its controller owns', () => {
  assert.deepEqual(values.primaries.map(ref), [ref(memcachedController)]);
  assert.deepEqual(values.owned.map(ref).sort(), (memcachedController.owns ?? []).map(ref).sort());
});
