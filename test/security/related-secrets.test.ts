/**
 * A related watch of Secrets is scoped, at install time and at start-up alike: the chart's
 * render fails and the forwarder's configuration is refused (both naming the watch) when a
 * Secret watch has neither namespaces (its own or the top-level ones) nor a labelSelector —
 * unscoped, the chart would grant get/list/watch on every Secret of the cluster. Namespaces
 * scope the grant itself (a Role per namespace, no ClusterRole on Secrets); a labelSelector
 * scopes only what is read, so the ClusterRole on Secrets stays (the chart's RBAC comment and
 * docs/forwarder.md say so). Uses the cached helm (src/testing/modules).
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAllDocuments } from 'yaml';
import { provision } from '../../src/testing/index.ts';
import { renderChart } from '../../src/build/forwarder-chart.ts';
import { parseConfig } from '../../src/forwarder/config/config.ts';

let helm: string;
before(async () => {
  const provisioned = await provision({ targets: ['helm'] });
  assert.ok(provisioned.helm, 'helm is provisioned');
  helm = provisioned.helm;
});

const MEMCACHED = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', plural: 'memcacheds', namespaced: true };
const secretWatch = (extra: object = {}) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  plural: 'secrets',
  namespaced: true,
  for: [{ apiVersion: MEMCACHED.apiVersion, kind: 'Memcached', field: 'spec.secretRef.name' }],
  ...extra,
});
const values = (related: object[], extra: object = {}) => ({
  clusterId: 'prod-eu',
  queue: { url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/work' },
  primaries: [MEMCACHED],
  owned: [],
  related,
  ...extra,
});

interface Rendered {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: { resources: string[] }[];
  data?: Record<string, string>;
}
const renderedObjects = (stdout: string): Rendered[] =>
  parseAllDocuments(stdout)
    .map((d) => d.toJS() as Rendered | null)
    .filter((o) => o !== null);
const resourcesOf = (objects: readonly Rendered[], kind: string) =>
  objects.filter((o) => o.kind === kind).flatMap((o) => (o.rules ?? []).flatMap((r) => r.resources));
const configOf = (objects: readonly Rendered[]) =>
  parseAllDocuments(objects.find((o) => o.kind === 'ConfigMap')?.data?.['forwarder.yaml'] ?? '')[0]?.toJS() as Record<string, unknown>;

test('an unscoped related Secret watch: the chart, which grants the privilege, refuses to render, naming the watch (the forwarder only warns: forwarder.ts)', async () => {
  const r = await renderChart(helm, { values: values([secretWatch()]) });
  assert.notEqual(r.code, 0, 'the render must fail');
  assert.match(r.stderr, /related\[0\]: a related watch of Secrets must set namespaces .* or a labelSelector/);
});

test('a related Secret watch scoped to namespaces: a Role on Secrets in each, no ClusterRole on Secrets', async () => {
  for (const v of [values([secretWatch({ namespaces: ['team-a'] })]), values([secretWatch()], { namespaces: ['team-a'] })]) {
    const r = await renderChart(helm, { values: v });
    assert.equal(r.code, 0, r.stderr);
    const objects = renderedObjects(r.stdout);
    assert.equal(resourcesOf(objects, 'ClusterRole').includes('secrets'), false, 'no cluster-wide grant on Secrets');
    const roles = objects.filter((o) => o.kind === 'Role' && (o.rules ?? []).some((x) => x.resources.includes('secrets')));
    assert.deepEqual(
      roles.map((o) => o.metadata.namespace),
      ['team-a'],
    );
    parseConfig(configOf(objects), { POD_NAMESPACE: 'operless' });
  }
});

test('a related Secret watch with a labelSelector renders, and its grant stays cluster-wide (what the comment and the docs say)', async () => {
  const r = await renderChart(helm, { values: values([secretWatch({ labelSelector: 'example.com/operator=memcached' })]) });
  assert.equal(r.code, 0, r.stderr);
  const objects = renderedObjects(r.stdout);
  assert.ok(resourcesOf(objects, 'ClusterRole').includes('secrets'), 'RBAC cannot select by label: the ClusterRole names secrets');
  const config = configOf(objects);
  assert.equal((config.related as { labelSelector?: string }[])[0]?.labelSelector, 'example.com/operator=memcached');
  parseConfig(config, { POD_NAMESPACE: 'operless' });
});

test('other related kinds (ConfigMaps) need no scope', async () => {
  const configMaps = { ...secretWatch(), kind: 'ConfigMap', plural: 'configmaps' };
  const r = await renderChart(helm, { values: values([configMaps]) });
  assert.equal(r.code, 0, r.stderr);
  parseConfig(values([configMaps]), { POD_NAMESPACE: 'operless' });
});
