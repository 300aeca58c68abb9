import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testCrd } from '../../../src/testing/test-crd.ts';
import { crdListPaths, loadCrdDocuments } from '../../../src/testing/crd-install.ts';

const PRESERVE = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };

test('testCrd defaults: namespaced, v1 served and stored, status subresource, any spec and status kept', () => {
  const crd = testCrd({ group: 'test.operless.dev', kind: 'Widget' });
  assert.equal(`${crd.apiVersion} ${crd.kind} ${crd.metadata.name}`, 'apiextensions.k8s.io/v1 CustomResourceDefinition widgets.test.operless.dev');
  assert.equal(crd.spec.group, 'test.operless.dev');
  assert.equal(crd.spec.scope, 'Namespaced');
  assert.deepEqual(crd.spec.names, { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' });
  const schema = { openAPIV3Schema: { type: 'object', properties: { spec: PRESERVE, status: PRESERVE } } };
  assert.deepEqual(crd.spec.versions, [{ name: 'v1', served: true, storage: true, subresources: { status: {} }, schema }]);
});

test('testCrd options: plural, cluster scope, version, no status subresource, a spec schema', () => {
  const size = { type: 'object', properties: { size: { type: 'integer', minimum: 0 } } };
  const crd = testCrd({ group: 'g.example', kind: 'Mouse', plural: 'mice', scope: 'Cluster', version: 'v1beta1', statusSubresource: false, specSchema: size });
  assert.equal(crd.metadata.name, 'mice.g.example');
  assert.equal(crd.spec.scope, 'Cluster');
  assert.deepEqual(crd.spec.names, { plural: 'mice', singular: 'mouse', kind: 'Mouse', listKind: 'MouseList' });
  assert.equal(crd.spec.versions.length, 1);
  const [version] = crd.spec.versions;
  assert.equal(version?.name, 'v1beta1');
  assert.equal(version !== undefined && 'subresources' in version, false);
  assert.deepEqual(version?.schema.openAPIV3Schema, { type: 'object', properties: { spec: size, status: PRESERVE } });
});

test('testCrd with a status schema: status is validated and pruned by it, spec stays any object', () => {
  const ready = { type: 'object', properties: { ready: { type: 'integer' } } };
  const [version] = testCrd({ group: 'g.example', kind: 'Mouse', statusSchema: ready }).spec.versions;
  assert.deepEqual(version?.schema.openAPIV3Schema, { type: 'object', properties: { spec: PRESERVE, status: ready } });
});

test('testCrd returns a new object each call: changing one leaves the next unchanged', () => {
  const schemaOf = (crd: ReturnType<typeof testCrd>) => crd.spec.versions[0]?.schema.openAPIV3Schema as { properties: { spec: Record<string, unknown> } };
  schemaOf(testCrd({ group: 'test.operless.dev', kind: 'Thing' })).properties.spec.type = 'string';
  assert.deepEqual(schemaOf(testCrd({ group: 'test.operless.dev', kind: 'Thing' })), { type: 'object', properties: { spec: PRESERVE, status: PRESERVE } });
});

test('the installer reads it as a CRD and lists its one served version', () => {
  const crd = testCrd({ group: 'test.operless.dev', kind: 'Gadget' });
  const [doc] = loadCrdDocuments(crd);
  assert.ok(doc);
  assert.deepEqual(crdListPaths(doc), ['/apis/test.operless.dev/v1/gadgets?limit=1']);
});
