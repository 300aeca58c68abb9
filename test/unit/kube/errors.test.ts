import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MAX_RETRY_AFTER_SECONDS,
  boundedRetryAfter,
  isConflict,
  isKubeApiError,
  isNotFound,
  parseKubeError,
  parseRetryAfter,
} from '../../../src/kube/errors.ts';

test('a Status body gives reason and message; the text names the request', () => {
  const body = JSON.stringify({
    kind: 'Status',
    status: 'Failure',
    reason: 'Conflict',
    code: 409,
    message: 'Operation cannot be fulfilled on memcacheds "m": the object has been modified',
  });
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

test('Retry-After is capped at MAX_RETRY_AFTER_SECONDS, from the header and from Status.details', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(MAX_RETRY_AFTER_SECONDS, 300);
  assert.equal(parseRetryAfter('86400', now), 300);
  assert.equal(parseRetryAfter('99999999999999999999999', now), 300);
  assert.equal(parseRetryAfter('Fri, 01 Jan 2027 00:00:00 GMT', now), 300, 'an HTTP date a year ahead');
  assert.equal(parseKubeError('GET /x', 429, '{"details":{"retryAfterSeconds":1e400}}', null).retryAfterSeconds, 300, 'JSON 1e400 parses to Infinity');
  assert.equal(parseKubeError('GET /x', 429, '{"details":{"retryAfterSeconds":2.5}}', null).retryAfterSeconds, 3, 'whole seconds');
  assert.equal(parseKubeError('GET /x', 429, '{"details":{"retryAfterSeconds":-4}}', null).retryAfterSeconds, undefined);
  assert.equal(boundedRetryAfter(Number.NaN), undefined);
  assert.equal(boundedRetryAfter(Number.POSITIVE_INFINITY), 300);
  assert.equal(boundedRetryAfter(12), 12);
});
