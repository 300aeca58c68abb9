import { test } from 'node:test';
import assert from 'node:assert/strict';
import { invokeBudgetMs, parseWebhookPath } from '../../../src/forwarder/webhook/server.ts';

test('parseWebhookPath serves configured aliases and the three routes only', () => {
  const functions = { memcached: 'arn:aws:lambda:eu-west-1:1:function:mc-webhook' };
  assert.deepEqual(parseWebhookPath('/memcached/validate', functions), { alias: 'memcached', functionName: functions.memcached, route: 'validate' });
  for (const path of ['/memcached/delete', '/other/validate', '/memcached/validate/', '/constructor/validate', '/__proto__/default', '/memcached/../validate', '//memcached/default', '/MEMCACHED/default']) {
    assert.equal(parseWebhookPath(path, functions), undefined, path);
  }
});

test('invokeBudgetMs keeps a margin under the API server\'s timeout and ignores nonsense', () => {
  assert.equal(invokeBudgetMs('10s'), 9500);
  assert.equal(invokeBudgetMs('30s'), 29_500);
  assert.equal(invokeBudgetMs('1s'), 500);
  for (const bad of [null, '', '0s', '31s', '10', '1e3s', '10m']) assert.equal(invokeBudgetMs(bad), 9500, String(bad));
});
