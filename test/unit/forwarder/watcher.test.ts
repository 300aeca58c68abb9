import { test } from 'node:test';
import assert from 'node:assert/strict';
import { collectionPath } from '../../../src/kube/paths.ts';
import {
  classifyWatchEnd,
  explainFailure,
  FULL_OBJECT_PAGE_LIMIT,
  isNotServed,
  listPageLimit,
  serverBehind,
  step,
  watchTimeoutSeconds,
  type AttemptOutcome,
} from '../../../src/forwarder/source/watcher.ts';
import { KubeApiError } from '../../../src/kube/api.ts';

test('collection paths for core and grouped kinds, namespaced or not', () => {
  assert.equal(collectionPath({ apiVersion: 'v1', plural: 'configmaps', namespaced: true }), '/api/v1/configmaps');
  assert.equal(collectionPath({ apiVersion: 'v1', plural: 'configmaps', namespaced: true }, 'ns'), '/api/v1/namespaces/ns/configmaps');
  assert.equal(collectionPath({ apiVersion: 'apps/v1', plural: 'deployments', namespaced: true }, 'a'), '/apis/apps/v1/namespaces/a/deployments');
  assert.equal(collectionPath({ apiVersion: 'example.com/v1', plural: 'fleets', namespaced: false }, 'ignored'), '/apis/example.com/v1/fleets');
});

const rv = '42';
const next = (outcome: AttemptOutcome, resyncPending = false) => step(outcome, resyncPending);

test('after a list: watch from its resourceVersion, or list again at once when a resync was requested during it', () => {
  assert.deepEqual(next({ kind: 'listed', resourceVersion: rv }), { next: { phase: 'watch', resourceVersion: rv }, backoff: false });
  assert.deepEqual(next({ kind: 'listed', resourceVersion: rv }, true), { next: { phase: 'list', cause: 'resync' }, backoff: false });
});

test('a failed list is retried with backoff (a pending resync stays pending: the counter, not the step, holds it)', () => {
  assert.deepEqual(next({ kind: 'list-failed', error: new Error('x'), cause: 'initial' }), { next: { phase: 'list', cause: 'initial' }, backoff: true });
  assert.deepEqual(next({ kind: 'list-failed', error: new Error('x'), cause: 'resync' }), { next: { phase: 'list', cause: 'retry' }, backoff: true });
});

test('a kind not served (404 from LIST or WATCH: its CRD is missing) waits, polling with backoff, resync pending or not', () => {
  const notFound = new KubeApiError({
    status: 404,
    reason: 'NotFound',
    request: 'LIST /apis/x/v1/gadgets',
    message: 'the server could not find the requested resource',
  });
  assert.equal(isNotServed(notFound), true);
  assert.equal(
    isNotServed(new KubeApiError({ status: 403, reason: 'Forbidden', request: 'LIST x', message: 'forbidden' })),
    false,
    'a 403 is an RBAC problem, not a missing kind',
  );
  assert.equal(isNotServed(new Error('ECONNREFUSED')), false);
  assert.deepEqual(next({ kind: 'not-served', error: notFound }), { next: { phase: 'waiting' }, backoff: true });
  assert.deepEqual(next({ kind: 'not-served', error: notFound }, true), { next: { phase: 'waiting' }, backoff: true });
  // The LIST that ends the wait is the stream's list: it watches from there, or lists again for a resync requested meanwhile.
  assert.deepEqual(next({ kind: 'listed', resourceVersion: rv }), { next: { phase: 'watch', resourceVersion: rv }, backoff: false });
});

test('how a watch ended decides the next step', () => {
  assert.deepEqual(
    next({ kind: 'closed', resourceVersion: rv, quick: false }),
    { next: { phase: 'watch', resourceVersion: rv }, backoff: false },
    'server timeout: resume at once',
  );
  assert.deepEqual(
    next({ kind: 'closed', resourceVersion: rv, quick: true }),
    { next: { phase: 'watch', resourceVersion: rv }, backoff: true },
    'closed at once: back off',
  );
  assert.deepEqual(next({ kind: 'silence', resourceVersion: rv }), { next: { phase: 'watch', resourceVersion: rv }, backoff: false });
  assert.deepEqual(next({ kind: 'gone', resourceVersion: rv }), { next: { phase: 'list', cause: 'gone' }, backoff: false });
  assert.deepEqual(
    next({ kind: 'too-large', resourceVersion: rv }),
    { next: { phase: 'list', cause: 'too-large' }, backoff: true },
    'never resume from a resourceVersion the server does not have',
  );
  assert.deepEqual(next({ kind: 'resync', resourceVersion: rv }, true), { next: { phase: 'list', cause: 'resync' }, backoff: false });
  assert.deepEqual(next({ kind: 'error', resourceVersion: rv, error: new Error('x'), status: 500 }), {
    next: { phase: 'watch', resourceVersion: rv },
    backoff: true,
  });
  assert.deepEqual(next({ kind: 'error', resourceVersion: rv, error: new Error('x') }, true), { next: { phase: 'list', cause: 'resync' }, backoff: true });
  assert.deepEqual(next({ kind: 'closed', resourceVersion: rv, quick: false }, true), { next: { phase: 'list', cause: 'resync' }, backoff: false });
});

test('what a failed watch means: 410 relists, 504 Too large resource version relists, anything else backs off', () => {
  assert.equal(classifyWatchEnd({ code: 410, reason: 'Expired', message: 'too old resource version: 1 (20)' }), 'gone');
  assert.equal(classifyWatchEnd({ reason: 'Gone' }), 'gone');
  // kube-apiserver 1.18.6+: the cause type; 1.17.0-1.18.5: the cause message; older: the message.
  assert.equal(
    classifyWatchEnd({
      code: 504,
      reason: 'Timeout',
      message: 'Too large resource version: 900, current: 50',
      details: { causes: [{ type: 'ResourceVersionTooLarge', message: 'Too large resource version' }] },
    }),
    'too-large',
  );
  assert.equal(classifyWatchEnd({ code: 504, reason: 'Timeout', message: 'x', details: { causes: [{ message: 'Too large resource version' }] } }), 'too-large');
  assert.equal(classifyWatchEnd({ code: 504, message: 'GET /x failed: 504 Timeout: Too large resource version: 9, current: 5' }), 'too-large');
  assert.equal(classifyWatchEnd({ code: 504, reason: 'Timeout', message: 'the server was unable to return a response in the time allotted' }), 'error');
  assert.equal(classifyWatchEnd({ code: 500, message: 'Too large resource version' }), 'error', 'only a timeout (504) means too large');
  assert.equal(classifyWatchEnd({ code: 403, reason: 'Forbidden' }), 'error');
  assert.equal(classifyWatchEnd({}), 'error');
});

test('every watch asks the server to close it inside the silence timeout, so an idle healthy watch never looks dead', () => {
  assert.equal(watchTimeoutSeconds(60, 75_000), 60, 'the defaults: 60 s inside 75 s');
  assert.equal(watchTimeoutSeconds(300, 70_000), 56, 'a longer server timeout is capped a fifth below the silence timeout');
  assert.equal(watchTimeoutSeconds(10, 75_000), 10, 'a shorter one is kept');
  assert.equal(watchTimeoutSeconds(300, 4_000), 3);
  assert.equal(watchTimeoutSeconds(300, 2_000), 1, 'never below 1 s');
  for (let silence = 2; silence <= 3600; silence++) {
    const t = watchTimeoutSeconds(3600, silence * 1000);
    assert.ok(t >= 1 && t < silence, `silence ${silence} s → timeout ${t} s`);
  }
});

test('failures are explained with what to do', () => {
  assert.match(
    explainFailure(new KubeApiError({ status: 403, reason: 'Forbidden', message: 'x', request: 'GET /x' }), 'LIST /apis/a/v1/b'),
    /forbidden.*Grant get\/list\/watch/,
  );
  assert.match(explainFailure(new KubeApiError({ status: 404, reason: 'NotFound', message: 'x', request: 'GET /x' }), 'LIST y'), /CRD installed/);
  assert.match(explainFailure(new KubeApiError({ status: 401, reason: 'Unauthorized', message: 'x', request: 'GET /x' }), 'LIST y'), /credentials/);
  assert.match(explainFailure(new Error('ECONNREFUSED'), 'WATCH z'), /WATCH z: ECONNREFUSED/);
});

test('the server is behind a resourceVersion only when both are etcd revisions and its own is lower', () => {
  assert.equal(serverBehind('1000', '999'), true);
  assert.equal(serverBehind('1000', '1000'), false);
  assert.equal(serverBehind('999', '1000'), false);
  assert.equal(serverBehind('18446744073709551616', '18446744073709551615'), true, 'beyond 2^53: compared exactly');
  assert.equal(serverBehind('abc', '1'), false, 'opaque resourceVersions are never compared');
  assert.equal(serverBehind('10', ''), false);
});

test('LIST pages: the configured size for metadata-only watches, at most FULL_OBJECT_PAGE_LIMIT for watches of whole objects', () => {
  assert.equal(listPageLimit({ objectFields: [] }, 500), 500);
  assert.equal(listPageLimit({ objectFields: ['*'] }, 500), FULL_OBJECT_PAGE_LIMIT);
  assert.equal(listPageLimit({ objectFields: ['status'] }, 500), FULL_OBJECT_PAGE_LIMIT);
  assert.equal(listPageLimit({ objectFields: ['*'] }, 10), 10, 'a smaller configured size stays');
});
