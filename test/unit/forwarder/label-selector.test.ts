/** Label selector syntax checked at config time (src/forwarder/config/label-selector.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { labelSelectorProblem } from '../../../src/forwarder/config/label-selector.ts';
import { ConfigError, parseConfig } from '../../../src/forwarder/config/config.ts';

test('selectors the API server accepts pass', () => {
  for (const ok of [
    'app=memcached',
    'app==memcached,tier!=cache',
    'environment in (production, qa)',
    'tier notin (frontend,backend)',
    'partition',
    '!partition',
    'app.kubernetes.io/name=memcached,app.kubernetes.io/instance',
    'a=',
    'x in (a, , b)',
  ])
    assert.equal(labelSelectorProblem(ok), undefined, ok);
});

test('malformed selectors are refused with what is wrong', () => {
  const cases: [string, RegExp][] = [
    ['app=memcached,', /empty requirement/],
    [',app', /empty requirement/],
    ['env in (a,b', /parentheses/],
    ['env in ((a))', /parentheses/],
    ['app=mem cached', /not a requirement/],
    ['-app=x', /label key/],
    ['Example.COM/app=x', /prefix/],
    [`app=${'v'.repeat(64)}`, /label value/],
    ['app in (ok,bad value)', /label value/],
    ['!a=b', /label key/],
  ];
  for (const [bad, why] of cases) assert.match(labelSelectorProblem(bad) ?? 'accepted', why, bad);
});

test('the config names the watch whose selector is wrong', () => {
  const input = {
    clusterId: 'c',
    queue: { url: 'https://sqs.us-east-1.amazonaws.com/123456789012/q' },
    primaries: [{ apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true, labelSelector: 'app=,' }],
  };
  assert.throws(
    () => parseConfig(input, {}, 'test'),
    (err: unknown) => err instanceof ConfigError && /primaries\[0\]\.labelSelector: is not a valid label selector: an empty requirement/.test(err.message),
  );
});
