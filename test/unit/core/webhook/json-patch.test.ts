import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { diffJson, escapePointerToken, jsonEqual, type JsonPatchOperation } from '../../../../src/core/webhook/json-patch.ts';

/** An RFC 6902 applier written from the RFC, independent of diffJson (add/remove/replace). */
function applyPatch(document: unknown, patch: readonly JsonPatchOperation[]): unknown {
  let root: unknown = structuredClone(document);
  for (const op of patch) {
    if (op.path === '') {
      assert.notEqual(op.op, 'remove');
      root = structuredClone((op as { value: unknown }).value);
      continue;
    }
    const tokens = op.path
      .slice(1)
      .split('/')
      .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = tokens.pop() as string;
    let parent = root as Record<string, unknown>;
    for (const token of tokens) {
      assert.ok(Object.hasOwn(parent, token), `path ${op.path} must exist`);
      parent = parent[token] as Record<string, unknown>;
    }
    assert.ok(typeof parent === 'object' && parent !== null && !Array.isArray(parent), `parent of ${op.path} must be an object`);
    if (op.op === 'remove' || op.op === 'replace') assert.ok(Object.hasOwn(parent, last), `${op.op} target ${op.path} must exist`);
    if (op.op === 'remove') delete parent[last];
    else Object.defineProperty(parent, last, { value: structuredClone(op.value), enumerable: true, writable: true, configurable: true });
  }
  return root;
}

test('property: applying diffJson(a, b) to a gives b', () => {
  fc.assert(
    fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
      assert.ok(jsonEqual(applyPatch(a, diffJson(a, b)), b));
    }),
    { numRuns: 500 },
  );
});

test('property: an object and a defaulted copy of it differ by exactly the added members, and equal values give no patch', () => {
  const objects = fc.dictionary(fc.string(), fc.jsonValue());
  fc.assert(
    fc.property(objects, objects, (object, defaults) => {
      const defaulted = { ...defaults, ...object };
      const patch = diffJson(object, defaulted);
      assert.ok(patch.every((op) => op.op === 'add'));
      assert.ok(jsonEqual(applyPatch(object, patch), defaulted));
      assert.deepEqual(diffJson(defaulted, structuredClone(defaulted)), []);
    }),
    { numRuns: 300 },
  );
});

test('pointers are escaped (RFC 6901) and arrays that changed are replaced whole', () => {
  assert.equal(escapePointerToken('a/b~c'), 'a~1b~0c');
  assert.deepEqual(diffJson({ metadata: { labels: {} } }, { metadata: { labels: { 'app.kubernetes.io/name': 'x' } } }), [
    { op: 'add', path: '/metadata/labels/app.kubernetes.io~1name', value: 'x' },
  ]);
  assert.deepEqual(diffJson({ a: [1, 2] }, { a: [1, 3] }), [{ op: 'replace', path: '/a', value: [1, 3] }]);
  assert.deepEqual(diffJson({ a: 1, b: 2 }, { b: 2 }), [{ op: 'remove', path: '/a' }]);
  assert.deepEqual(diffJson({ a: 1 }, { a: 1, b: undefined }), [], 'undefined members are absent, as in JSON');
  assert.deepEqual(diffJson({}, JSON.parse('{"__proto__":{"x":1}}')), [{ op: 'add', path: '/__proto__', value: { x: 1 } }]);
});
