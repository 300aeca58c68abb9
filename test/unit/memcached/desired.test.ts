import { test } from 'node:test';
import assert from 'node:assert/strict';
import { desiredDeployment, desiredService, podSelector } from '../../../src/memcached/desired.ts';
import { memcached } from './fixtures.ts';

type Obj = Record<string, any>;

test('Deployment: replicas = size, memcached -m and -p, port, probes, selector from the name', () => {
  const d = desiredDeployment(memcached({ size: 5, memoryLimitMB: 128, port: 12000 })) as Obj;
  assert.equal(d.apiVersion, 'apps/v1');
  assert.deepEqual(d.metadata, {
    name: 'cache',
    namespace: 'shop',
    labels: {
      'app.kubernetes.io/name': 'memcached',
      'app.kubernetes.io/instance': 'cache',
      'app.kubernetes.io/managed-by': 'operless',
      'app.kubernetes.io/component': 'cache',
    },
  });
  assert.equal(d.spec.replicas, 5);
  assert.deepEqual(d.spec.selector.matchLabels, { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' });
  const [c] = d.spec.template.spec.containers;
  assert.equal(c.image, 'memcached:1.6.38-alpine');
  assert.deepEqual([...c.command, ...c.args], ['memcached', '-m', '128', '-p', '12000']);
  assert.deepEqual(c.ports, [{ name: 'memcached', containerPort: 12000, protocol: 'TCP' }]);
  assert.deepEqual(c.readinessProbe.tcpSocket, { port: 'memcached' });
  assert.deepEqual(c.livenessProbe.tcpSocket, { port: 'memcached' });
  assert.equal(c.resources, undefined, 'no resources unless the spec has them');
  for (const [k, v] of Object.entries(d.spec.selector.matchLabels)) assert.equal(d.spec.template.metadata.labels[k], v);
});

test('Deployment: restricted Pod Security Standard', () => {
  const pod = (desiredDeployment(memcached()) as Obj).spec.template.spec;
  assert.equal(pod.securityContext.runAsNonRoot, true);
  assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault');
  assert.equal(pod.automountServiceAccountToken, false);
  const sc = pod.containers[0].securityContext;
  assert.equal(sc.allowPrivilegeEscalation, false);
  assert.equal(sc.runAsNonRoot, true);
  assert.ok(sc.runAsUser > 0);
  assert.equal(sc.readOnlyRootFilesystem, true);
  assert.deepEqual(sc.capabilities.drop, ['ALL']);
});

test('Deployment: resources copied from the spec', () => {
  const resources = { limits: { memory: '256Mi', cpu: '1' }, requests: { memory: '128Mi' } };
  const c = (desiredDeployment(memcached({ resources })) as Obj).spec.template.spec.containers[0];
  assert.deepEqual(c.resources, resources);
});

test('Service: headless, same selector, named port', () => {
  const s = desiredService(memcached({ port: 12000 })) as Obj;
  assert.equal(s.spec.clusterIP, 'None');
  assert.deepEqual(s.spec.selector, { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' });
  assert.deepEqual(s.spec.ports, [{ name: 'memcached', port: 12000, targetPort: 'memcached', protocol: 'TCP' }]);
});

test('pure and deterministic; selector string for list requests', () => {
  const mc = memcached();
  assert.deepEqual(desiredDeployment(mc), desiredDeployment(structuredClone(mc)));
  assert.equal(podSelector(mc), 'app.kubernetes.io/name=memcached,app.kubernetes.io/instance=cache');
});
