import { test } from 'node:test';
import assert from 'node:assert/strict';
import { collectionPath, explainFailure, nextStep } from '../../../src/forwarder/watcher.ts';
import { KubeApiError } from '../../../src/forwarder/kube-api.ts';

test('collection paths for core and grouped kinds, namespaced or not', () => {
  assert.equal(collectionPath({ apiVersion: 'v1', plural: 'configmaps', namespaced: true }), '/api/v1/configmaps');
  assert.equal(collectionPath({ apiVersion: 'v1', plural: 'configmaps', namespaced: true }, 'ns'), '/api/v1/namespaces/ns/configmaps');
  assert.equal(collectionPath({ apiVersion: 'apps/v1', plural: 'deployments', namespaced: true }, 'a'), '/apis/apps/v1/namespaces/a/deployments');
  assert.equal(collectionPath({ apiVersion: 'example.com/v1', plural: 'fleets', namespaced: false }, 'ignored'), '/apis/example.com/v1/fleets');
});

test('how a watch ended decides the next step', () => {
  assert.equal(nextStep({ kind: 'closed' }), 'resume');
  assert.equal(nextStep({ kind: 'silence' }), 'resume');
  assert.equal(nextStep({ kind: 'gone' }), 'relist');
  assert.equal(nextStep({ kind: 'error', status: 410 }), 'relist');
  assert.equal(nextStep({ kind: 'error', status: 500 }), 'backoff-resume');
  assert.equal(nextStep({ kind: 'error' }), 'backoff-resume');
});

test('failures are explained with what to do', () => {
  assert.match(explainFailure(new KubeApiError({ status: 403, reason: 'Forbidden', message: 'x', request: 'GET /x' }), 'LIST /apis/a/v1/b'), /forbidden.*Grant get\/list\/watch/);
  assert.match(explainFailure(new KubeApiError({ status: 404, reason: 'NotFound', message: 'x', request: 'GET /x' }), 'LIST y'), /CRD installed/);
  assert.match(explainFailure(new KubeApiError({ status: 401, reason: 'Unauthorized', message: 'x', request: 'GET /x' }), 'LIST y'), /credentials/);
  assert.match(explainFailure(new Error('ECONNREFUSED'), 'WATCH z'), /WATCH z: ECONNREFUSED/);
});
