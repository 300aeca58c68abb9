/**
 * The contract's own rules beyond the shape the schema checks: namespaces are DNS-1123
 * labels, fields a consumer does not know are ignored within v=1 (and never written by the
 * encoder), `notBefore` is bounded by the validating side's clock, and `messageProblem`
 * names the field at fault without throwing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MAX_WAIT_SECONDS,
  NOT_BEFORE_SKEW_MS,
  checkMessageField,
  decodeMessage,
  encodeMessage,
  latestNotBefore,
  messageProblem,
  mergedOwnedKinds,
  newMessage,
  validateMessage,
  type ReconcileMessage,
} from '../../../src/contract/message.ts';

const NOW = 1_700_000_000_000;
const base: ReconcileMessage = newMessage({ cluster: 'c', apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'x' }, 'Added', NOW);

test('namespace must be a DNS-1123 label, not a subdomain', () => {
  assert.equal(checkMessageField('namespace', 'team-a'), undefined);
  assert.match(checkMessageField('namespace', 'team.a') ?? '', /DNS-1123 label/);
  assert.equal(validateMessage({ ...base, namespace: 'a.b' }).ok, false);
  assert.equal(validateMessage({ ...base, namespace: 'a'.repeat(63) }).ok, true);
  assert.equal(validateMessage({ ...base, namespace: 'a'.repeat(64) }).ok, false);
  assert.equal(validateMessage({ ...base, name: 'a.b' }).ok, true, 'names stay subdomains');
});

test('a field this version does not define is ignored by the decoder and dropped from the message', () => {
  const body = JSON.stringify({ ...base, traceparent: '00-abc-def-01', nested: { a: [1] } });
  const decoded = decodeMessage(body);
  assert.ok(decoded.ok, decoded.ok ? '' : decoded.error);
  assert.deepEqual(decoded.message, base);
  assert.equal('traceparent' in decoded.message, false);
  // what a consumer writes back (a follow-up built from the decoded message) is strict again
  assert.equal(encodeMessage(decoded.message), JSON.stringify(base));
});

test('a different contract version is still rejected', () => {
  for (const v of [2, 0, '1', null]) {
    const decoded = decodeMessage(JSON.stringify({ ...base, v }));
    assert.equal(decoded.ok, false);
    assert.match(decoded.ok ? '' : decoded.error, /contract version/);
  }
});

test('the encoder never writes an unknown field', () => {
  const withExtra = { ...base, extra: 1 } as unknown as ReconcileMessage;
  assert.throws(() => encodeMessage(withExtra), /unknown field "extra"/);
  assert.deepEqual(messageProblem(withExtra), { field: 'extra', error: 'unknown field "extra" (contract v1 does not define it)' });
});

test('notBefore is at most MAX_WAIT_SECONDS (+ clock skew) after the validating clock', () => {
  const latest = latestNotBefore(NOW);
  assert.equal(latest, NOW + MAX_WAIT_SECONDS * 1000 + NOT_BEFORE_SKEW_MS);
  assert.equal(validateMessage({ ...base, notBefore: latest }, { now: NOW }).ok, true);
  const late = validateMessage({ ...base, notBefore: latest + 1 }, { now: NOW });
  assert.equal(late.ok, false);
  assert.match(late.ok ? '' : late.error, /field "notBefore" must be at most 604800 s/);
  assert.equal(validateMessage({ ...base, notBefore: latest + 1 }, { now: NOW + 1 }).ok, true, 'relative to the clock, not absolute');
  const far = JSON.stringify({ ...base, notBefore: 8_640_000_000_000_000 });
  assert.equal(decodeMessage(far).ok, false, 'a notBefore in the year 275760 would be re-delayed for ever');
  assert.equal(messageProblem({ ...base, notBefore: Date.now() + (MAX_WAIT_SECONDS + 3600) * 1000 })?.field, 'notBefore');
});

test('messageProblem names the field at fault and never throws', () => {
  assert.equal(messageProblem(base), undefined);
  assert.deepEqual(messageProblem({ ...base, name: 'Bad_Name' }), { field: 'name', error: 'field "name" must be a DNS-1123 subdomain, got "Bad_Name"' });
  assert.equal(messageProblem({ ...base, name: 'a'.repeat(254) })?.field, 'name');
  assert.equal(messageProblem({ ...base, uid: 'u'.repeat(129) })?.field, 'uid');
  assert.equal(messageProblem({ ...base, uid: '' })?.field, 'uid');
  assert.equal(messageProblem(null as unknown as ReconcileMessage)?.field, undefined);
  assert.match(messageProblem(null as unknown as ReconcileMessage)?.error ?? '', /JSON object/);
});

test('ownedKinds: one to 16 distinct Kinds; mergedOwnedKinds is their union only when every part names its own', () => {
  assert.equal(checkMessageField('ownedKinds', ['Deployment', 'Service']), undefined);
  assert.match(checkMessageField('ownedKinds', []) ?? '', /must not be empty/);
  assert.match(checkMessageField('ownedKinds', 'Deployment') ?? '', /array/);
  assert.match(checkMessageField('ownedKinds', ['Deployment', 'Deployment']) ?? '', /twice/);
  assert.match(checkMessageField('ownedKinds', ['deployment']) ?? '', /item 0 .*PascalCase/);
  assert.match(
    checkMessageField(
      'ownedKinds',
      Array.from({ length: 17 }, (_, i) => `K${i}`),
    ) ?? '',
    /at most 16/,
  );
  const owned = { ...base, reason: 'Owned' as const, ownedKinds: ['Deployment'] };
  const decoded = decodeMessage(encodeMessage(owned));
  assert.ok(decoded.ok && decoded.message.ownedKinds?.[0] === 'Deployment');
  assert.deepEqual(mergedOwnedKinds([{ ownedKinds: ['Service'] }, { ownedKinds: ['Deployment', 'Service'] }]), ['Deployment', 'Service']);
  assert.equal(mergedOwnedKinds([{ ownedKinds: ['Service'] }, {}]), undefined);
  assert.equal(mergedOwnedKinds([]), undefined);
});
