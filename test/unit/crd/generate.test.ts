import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { crdFileName, generateCrd, renderCrd, resourceCrd, staleCrds, writeCrds } from '../../../src/crd/generate.ts';
import { defineResource } from '../../../src/crd/resource.ts';
import { integer, object, required, SchemaError } from '../../../src/crd/schema.ts';
import { CRD_DIR, resources as projectResources } from '../../../src/resources.ts';
import { MemcachedResource } from '../../../src/memcached/types.ts';

test('the checked-in CRDs in infra/crds match the TypeScript definitions', () => {
  const stale = staleCrds(CRD_DIR, projectResources);
  assert.deepEqual(stale, [], `stale CRD files: ${stale.map((s) => `${s.path} (${s.problem})`).join(', ')} — run \`npm run crd\` and commit the result`);
});

test('staleCrds reports a missing file and an edited file; writeCrds repairs both and is idempotent', () => {
  const dir = mkdtempSync(join(tmpdir(), 'crds-'));
  assert.deepEqual(
    staleCrds(dir, projectResources).map((s) => s.problem),
    projectResources.map(() => 'missing'),
  );
  const written = writeCrds(dir, projectResources);
  assert.equal(written.length, projectResources.length);
  assert.deepEqual(staleCrds(dir, projectResources), []);
  assert.deepEqual(writeCrds(dir, projectResources), [], 'a second write changes nothing');
  const path = join(dir, crdFileName(MemcachedResource));
  writeFileSync(path, readFileSync(path, 'utf8').replace('maximum: 100', 'maximum: 101'));
  assert.deepEqual(staleCrds(dir, projectResources), [{ path, problem: 'outdated' }]);
});

test('Memcached CRD: names, scope, status and scale subresources, printer columns', () => {
  const crd = generateCrd(MemcachedResource) as any;
  assert.equal(crd.metadata.name, 'memcacheds.cache.example.com');
  assert.equal(crd.spec.group, 'cache.example.com');
  assert.equal(crd.spec.scope, 'Namespaced');
  assert.deepEqual(crd.spec.names.shortNames, ['mc']);
  assert.equal(crd.spec.names.listKind, 'MemcachedList');
  const [version] = crd.spec.versions;
  assert.equal(version.name, 'v1alpha1');
  assert.equal(version.storage, true);
  assert.deepEqual(version.subresources.status, {});
  assert.equal(version.subresources.scale.specReplicasPath, '.spec.size');
  assert.deepEqual(
    version.additionalPrinterColumns.map((c: { name: string }) => c.name),
    ['Size', 'Ready', 'Available', 'Image', 'Age'],
  );
  const spec = version.schema.openAPIV3Schema.properties.spec;
  assert.deepEqual(spec.required, ['size']);
  assert.deepEqual(version.schema.openAPIV3Schema.required, ['spec']);
  assert.equal(spec.properties.size.minimum, 0);
  assert.equal(spec.properties.size.maximum, 100);
  assert.equal(spec.properties.port.default, 11211);
  assert.match(spec.properties.image.default, /^memcached:\d+\.\d+\.\d+/);
  assert.ok(spec.properties.image['x-kubernetes-validations'][0].rule.includes(':latest'));
});

test('rendered YAML parses back to the generated object and names its source', () => {
  const resource = projectResources[0]!;
  const text = renderCrd(resource);
  assert.match(text, /Generated from src\/memcached\/types\.ts/);
  assert.deepEqual(parse(text), resourceCrd(resource));
  assert.equal(renderCrd(resource), text, 'deterministic');
});

test('the checked-in Memcached CRD lists v1beta1 without serving it: a plain install needs no conversion webhook', () => {
  const crd = parse(renderCrd(projectResources[0]!)) as { spec: { versions: { name: string; served: boolean; storage: boolean }[]; conversion?: unknown } };
  assert.deepEqual(
    crd.spec.versions.map((v) => [v.name, v.served, v.storage]),
    [
      ['v1alpha1', true, true],
      ['v1beta1', false, false],
    ],
  );
  assert.equal(crd.spec.conversion, undefined, 'strategy None: nothing to call');
});

test('defineResource rejects bad names and paths that are not in the schema', () => {
  const spec = object({ size: required(integer()) });
  const base = { group: 'x.example.com', version: 'v1', kind: 'Thing', scope: 'Namespaced' as const, spec };
  assert.throws(() => defineResource({ ...base, group: 'nodot' }), /DNS subdomain with a dot/);
  assert.throws(() => defineResource({ ...base, version: '1' }), /version/);
  assert.throws(() => defineResource({ ...base, kind: 'thing' }), /PascalCase/);
  assert.throws(() => defineResource({ ...base, shortNames: ['Bad'] }), /lower-case DNS label/);
  assert.throws(() => defineResource({ ...base, printerColumns: [{ name: 'X', type: 'integer', jsonPath: '.spec.sise' }] }), /no field "sise"/);
  assert.throws(() => defineResource({ ...base, scale: { specReplicasPath: '.spec.size', statusReplicasPath: '.status.ready' } }), SchemaError);
  const ok = defineResource({ ...base, printerColumns: [{ name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' }] });
  assert.deepEqual(ok.kindRef, { apiVersion: 'x.example.com/v1', kind: 'Thing', plural: 'things', namespaced: true });
  assert.equal(ok.crdName, 'things.x.example.com');
});
