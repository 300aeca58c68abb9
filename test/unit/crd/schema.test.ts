import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  array,
  boolean,
  conditions,
  integer,
  intOrString,
  map,
  object,
  oneOf,
  quantity,
  required,
  SchemaError,
  string,
  type Infer,
  type OpenApiSchema,
} from '../../../src/crd/schema.ts';

test('object: required and defaulted fields are present in the inferred type, others optional', () => {
  const spec = object({
    size: required(integer({ minimum: 0 })),
    port: integer({ default: 80 }),
    note: string(),
    mode: oneOf(['a', 'b'], { default: 'a' }),
  });
  type Spec = Infer<typeof spec>;
  // Compile-time checks: these assignments only typecheck if the inference is right.
  const full: Spec = { size: 1, port: 80, mode: 'b', note: 'x' };
  const minimal: Spec = { size: 0, port: 1, mode: 'a' };
  // @ts-expect-error size is required
  const missingSize: Spec = { port: 1, mode: 'a' };
  // @ts-expect-error mode is a union of literals
  const badMode: Spec = { size: 0, port: 1, mode: 'c' };
  assert.ok(full && minimal && missingSize && badMode);
  assert.deepEqual(spec.openApi.required, ['size']);
  assert.equal(spec.openApi.properties?.port?.default, 80);
  assert.deepEqual(spec.openApi.properties?.mode?.enum, ['a', 'b']);
});

test('integer: int32 by default, bounds emitted', () => {
  assert.deepEqual(integer({ minimum: 0, maximum: 100 }).openApi, { type: 'integer', format: 'int32', minimum: 0, maximum: 100 });
  assert.equal(integer({ format: 'int64' }).openApi.format, 'int64');
});

test('build-time errors for contradictory options', () => {
  assert.throws(() => integer({ minimum: 5, maximum: 1 }), SchemaError);
  assert.throws(() => integer({ minimum: 0, maximum: 10, default: 11 }), /above its maximum/);
  assert.throws(() => integer({ default: 1.5 }), /not an integer/);
  assert.throws(() => string({ pattern: '^[a-z]+$', default: 'ABC' }), /does not match its own pattern/);
  assert.throws(() => string({ pattern: '(' }), /not a valid regular expression/);
  assert.throws(() => oneOf(['a', 'b'], { default: 'c' as 'a' }), /not one of/);
  assert.throws(() => required(integer({ default: 1 })), /cannot also be required/);
  assert.throws(() => array(object({ name: string() }), { listType: 'map', listMapKeys: ['name'] }), /must be required or defaulted/);
  assert.throws(() => array(object({ name: required(string()) }), { listType: 'map', listMapKeys: ['id'] }), /not a property/);
  assert.throws(() => string({ validations: [{ rule: ' ' }] }), /empty rule/);
  assert.throws(() => object({ size: required(integer()) }, { default: {} }), /lacks the required field\(s\) size/);
  assert.ok(object({ size: integer({ default: 1 }) }, { default: {} }).hasDefault);
});

test('CEL validations are emitted as x-kubernetes-validations', () => {
  const s = string({ validations: [{ rule: "self != 'x'", message: 'not x' }] });
  assert.deepEqual(s.openApi['x-kubernetes-validations'], [{ rule: "self != 'x'", message: 'not x' }]);
});

test('int-or-string and quantities are structural (anyOf + x-kubernetes-int-or-string)', () => {
  const q = quantity().openApi;
  assert.equal(q['x-kubernetes-int-or-string'], true);
  assert.deepEqual(q.anyOf, [{ type: 'integer' }, { type: 'string' }]);
  const re = new RegExp(q.pattern ?? '');
  for (const ok of ['256Mi', '1G', '500m', '0.5', '1e3', '2Ki']) assert.ok(re.test(ok), ok);
  for (const bad of ['256MB', 'lots', '', '1 Gi']) assert.ok(!re.test(bad), bad);
  assert.equal(intOrString().openApi.pattern, undefined);
});

test('conditions: a map list keyed by type, with the metav1.Condition required fields', () => {
  const c = conditions().openApi;
  assert.equal(c['x-kubernetes-list-type'], 'map');
  assert.deepEqual(c['x-kubernetes-list-map-keys'], ['type']);
  assert.deepEqual(c.items?.required, ['type', 'status', 'lastTransitionTime', 'reason', 'message']);
});

test('every generated node is structural: a type, or int-or-string, at every level', () => {
  const schema = object({
    a: map(quantity()),
    b: array(object({ c: boolean(), d: required(string()) })),
    e: conditions(),
  });
  const visit = (node: OpenApiSchema, path: string) => {
    assert.ok(node.type !== undefined || node['x-kubernetes-int-or-string'], `${path} has no type`);
    for (const [name, child] of Object.entries(node.properties ?? {})) visit(child, `${path}.${name}`);
    if (node.items) visit(node.items, `${path}[]`);
    if (node.additionalProperties) visit(node.additionalProperties, `${path}{}`);
  };
  visit(schema.openApi, '');
});
