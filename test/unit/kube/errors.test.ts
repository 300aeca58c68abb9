import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isConflict, isKubeApiError, isNotFound, parseKubeError, parseRetryAfter } from '../../../src/kube/errors.ts';

test('a Status body gives reason and message; the text names the request', () => {
  const body = JSON.stringify({ kind: 'Status', status: 'Failure', reason: 'Conflict', code: 409, message: 'Operation cannot be fulfilled on memcacheds "m": the object has been modified' });
  const err = parseKubeError('PATCH /apis/x/v1/namespaces/ns/memcacheds/m', 409, body, null);
  assert.equal(err.status, 409);
  assert.equal(err.reason, 'Conflict');
  assert.equal(err.retryAfterSeconds, undefined);
  assert.match(err.message, /^PATCH \/apis\/x\/v1\/namespaces\/ns\/memcacheds\/m failed: 409 Conflict: Operation cannot be fulfilled/);
  assert.ok(isKubeApiError(err) && isConflict(err) && !isNotFound(err));
});

test('Retry-After comes from the header, else from Status.details', () => {
  assert.equal(parseKubeError('GET /x', 429, '{"reason":"TooManyRequests","details":{"retryAfterSeconds":3}}', '7').retryAfterSeconds, 7);
  assert.equal(parseKubeError('GET /x', 429, '{"reason":"TooManyRequests","details":{"retryAfterSeconds":3}}', null).retryAfterSeconds, 3);
  assert.equal(parseKubeError('GET /x', 503, 'upstream connect error', '2').retryAfterSeconds, 2);
});

test('a non-JSON body is kept (trimmed) and the status decides the reason', () => {
  const err = parseKubeError('GET /x', 503, '  upstream connect error  ', null);
  assert.equal(err.reason, 'ServiceUnavailable');
  assert.match(err.message, /503 ServiceUnavailable: upstream connect error$/);
});

test('403 says what to do', () => {
  assert.match(parseKubeError('GET /x', 403, '{"reason":"Forbidden","message":"nope"}', null).message, /grant this verb on this resource/);
});

test('parseRetryAfter: seconds, HTTP dates, junk', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(parseRetryAfter('120', now), 120);
  assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now), 30);
  assert.equal(parseRetryAfter('0', now), undefined);
  assert.equal(parseRetryAfter('soon', now), undefined);
  assert.equal(parseRetryAfter(null, now), undefined);
});
