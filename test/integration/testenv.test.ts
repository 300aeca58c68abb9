/**
 * The test control plane against itself: a real etcd + kube-apiserver started by
 * `startControlPlane()`, driven through `@kubernetes/client-node` the way operators use it.
 * CRDs, the status subresource, server-side apply, watches, RBAC, identities, restarts and
 * etcd compaction.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException, CoreV1Api, CustomObjectsApi, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions, Watch } from '@kubernetes/client-node';
import { startControlPlane, testCrd } from '../../src/testing/index.ts';
import type { ControlPlane } from '../../src/testing/index.ts';

const GROUP = 'test.operless.dev';
const VERSION = 'v1';
const PLURAL = 'widgets';

const widgetCrd = testCrd({
  group: GROUP,
  kind: 'Widget',
  plural: PLURAL,
  version: VERSION,
  specSchema: { type: 'object', properties: { size: { type: 'integer', minimum: 0 }, color: { type: 'string' } } },
  statusSchema: { type: 'object', properties: { ready: { type: 'integer' } } },
});

/** A second CRD, as a YAML file, to check the file path form of `crds`. */
const gadgetCrdYaml = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.${GROUP}
spec:
  group: ${GROUP}
  scope: Cluster
  names: { plural: gadgets, singular: gadget, kind: Gadget }
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: { type: object, x-kubernetes-preserve-unknown-fields: true }
`;

/** Command lines of running processes that mention `text` (zombies have none). */
function processesMentioning(text: string): string[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid)
    .flatMap((p) => {
      try {
        const cmdline = readFileSync(`/proc/${p}/cmdline`, 'utf8').replaceAll('\0', ' ');
        return cmdline.includes(text) ? [cmdline] : [];
      } catch {
        return [];
      }
    });
}

function statusOf(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}

async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`${what} did not happen within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('startControlPlane', () => {
  let cp: ControlPlane;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'operless-crd-'));
    const file = join(dir, 'gadgets.yaml');
    writeFileSync(file, gadgetCrdYaml);
    cp = await startControlPlane({ crds: [widgetCrd, file] });
    custom = cp.kubeConfig.makeApiClient(CustomObjectsApi);
    core = cp.kubeConfig.makeApiClient(CoreV1Api);
  });
  after(() => cp?.stop());

  test('the kubeconfig reaches a v1.34 API server over verified TLS, as an admin', async () => {
    const version = await cp.kubectl(['version', '-o', 'json']);
    assert.equal(version.code, 0, version.stderr);
    assert.match(JSON.parse(version.stdout).serverVersion.gitVersion, /^v1\.34\./);
    const ns = await core.readNamespace({ name: 'default' });
    assert.equal(ns.metadata?.name, 'default');
    assert.match(cp.kubeconfigYaml, /certificate-authority-data/);
    assert.doesNotMatch(cp.kubeconfigYaml, /insecure-skip-tls-verify/);
  });

  test('CRDs from objects and YAML files are installed and served', async () => {
    const list = await custom.listClusterCustomObject({ group: GROUP, version: 'v1', plural: 'gadgets' });
    assert.deepEqual((list as { items: unknown[] }).items, []);
  });

  test('create, get, list, status subresource, server-side apply', async () => {
    const namespace = 'default';
    const created = (await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: PLURAL,
      body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 1 } },
    })) as { metadata: { uid: string; generation: number } };
    assert.ok(created.metadata.uid);

    const got = (await custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name: 'w1' })) as {
      spec: { size: number };
    };
    assert.equal(got.spec.size, 1);

    const listed = (await custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL })) as {
      items: { metadata: { name: string } }[];
    };
    assert.deepEqual(
      listed.items.map((i) => i.metadata.name),
      ['w1'],
    );

    // Status through the status subresource: spec changes there are ignored, generation stays.
    await custom.patchNamespacedCustomObjectStatus(
      { group: GROUP, version: VERSION, namespace, plural: PLURAL, name: 'w1', body: { status: { ready: 1 }, spec: { size: 99 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const afterStatus = (await custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name: 'w1' })) as {
      spec: { size: number };
      status: { ready: number };
      metadata: { generation: number };
    };
    assert.equal(afterStatus.status.ready, 1);
    assert.equal(afterStatus.spec.size, 1);
    assert.equal(afterStatus.metadata.generation, created.metadata.generation);

    // Server-side apply with a field manager: the manager owns the fields it applied.
    await custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        namespace,
        plural: PLURAL,
        name: 'w1',
        body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'Widget', metadata: { name: 'w1' }, spec: { color: 'blue' } },
        fieldManager: 'painter',
        force: true,
      },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    );
    const applied = (await custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name: 'w1' })) as {
      spec: { size: number; color: string };
      metadata: { managedFields: { manager: string; operation: string; fieldsV1: unknown }[] };
    };
    assert.deepEqual(applied.spec, { size: 1, color: 'blue' });
    const painter = applied.metadata.managedFields.find((f) => f.manager === 'painter');
    assert.equal(painter?.operation, 'Apply');
    assert.deepEqual(painter?.fieldsV1, { 'f:spec': { 'f:color': {} } });

    // A second manager applying a conflicting value without force gets 409.
    await assert.rejects(
      custom.patchNamespacedCustomObject(
        {
          group: GROUP,
          version: VERSION,
          namespace,
          plural: PLURAL,
          name: 'w1',
          body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'Widget', metadata: { name: 'w1' }, spec: { color: 'red' } },
          fieldManager: 'other',
        },
        setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
      ),
      (err: unknown) => statusOf(err) === 409,
    );
  });

  test('a watch sees ADDED, MODIFIED and DELETED', async () => {
    const namespace = 'default';
    const seen: string[] = [];
    const watch = new Watch(cp.kubeConfig);
    const controller = await watch.watch(
      `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`,
      { fieldSelector: 'metadata.name=watched' },
      (phase, obj: { metadata?: { name?: string } }) => {
        if (obj.metadata?.name === 'watched') seen.push(phase);
      },
      () => {},
    );
    try {
      await custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: PLURAL,
        body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'Widget', metadata: { name: 'watched' }, spec: { size: 1 } },
      });
      await custom.patchNamespacedCustomObject(
        { group: GROUP, version: VERSION, namespace, plural: PLURAL, name: 'watched', body: { spec: { size: 2 } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name: 'watched' });
      await eventually('the DELETED event', async () => (seen.includes('DELETED') ? true : undefined));
      assert.deepEqual(seen, ['ADDED', 'MODIFIED', 'DELETED']);
    } finally {
      controller.abort();
    }
  });

  test('RBAC is enforced for a restricted identity: 403 on what was not granted, success on what was', async () => {
    const rbac = cp.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await core.createNamespace({ body: { metadata: { name: 'rbac-test' } } });
    await rbac.createNamespacedRole({
      namespace: 'rbac-test',
      body: {
        metadata: { name: 'configmap-reader' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: 'rbac-test',
      body: {
        metadata: { name: 'readers' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'configmap-reader' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'readers' }],
      },
    });
    await core.createNamespacedConfigMap({ namespace: 'rbac-test', body: { metadata: { name: 'cm' }, data: { a: '1' } } });

    const reader = await cp.identity('rita', ['readers']);
    const asReader = reader.kubeConfig.makeApiClient(CoreV1Api);
    const cm = await asReader.readNamespacedConfigMap({ namespace: 'rbac-test', name: 'cm' });
    assert.equal(cm.data?.a, '1');
    await assert.rejects(
      asReader.createNamespacedConfigMap({ namespace: 'rbac-test', body: { metadata: { name: 'nope' } } }),
      (e: unknown) => statusOf(e) === 403,
    );
    await assert.rejects(asReader.readNamespacedConfigMap({ namespace: 'default', name: 'kube-root-ca.crt' }), (e: unknown) => statusOf(e) === 403);
    await assert.rejects(asReader.listNamespacedSecret({ namespace: 'rbac-test' }), (e: unknown) => statusOf(e) === 403);

    // Someone outside the group gets nothing.
    const stranger = await cp.identity('sam');
    await assert.rejects(
      stranger.kubeConfig.makeApiClient(CoreV1Api).readNamespacedConfigMap({ namespace: 'rbac-test', name: 'cm' }),
      (e: unknown) => statusOf(e) === 403,
    );

    // kubectl agrees, and sees who it is.
    const whoami = await cp.kubectl(['auth', 'whoami', '-o', 'json'], { as: reader });
    assert.equal(whoami.code, 0, whoami.stderr);
    const status = JSON.parse(whoami.stdout).status.userInfo as { username: string; groups: string[] };
    assert.equal(status.username, 'rita');
    assert.ok(status.groups.includes('readers'));
  });

  test('a ServiceAccount identity is bound by RBAC like an in-cluster component', async () => {
    const sa = await cp.serviceAccount('sa-test', 'forwarder');
    assert.equal(sa.user, 'system:serviceaccount:sa-test:forwarder');
    assert.ok(sa.token);
    const asSa = sa.kubeConfig.makeApiClient(CoreV1Api);
    await assert.rejects(asSa.listNamespacedConfigMap({ namespace: 'sa-test' }), (e: unknown) => statusOf(e) === 403);
    const rbac = cp.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: 'sa-test',
      body: { metadata: { name: 'lister' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }] },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: 'sa-test',
      body: {
        metadata: { name: 'forwarder-lister' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'lister' },
        subjects: [{ kind: 'ServiceAccount', name: 'forwarder', namespace: 'sa-test' }],
      },
    });
    const list = await eventually('the RoleBinding to take effect', async () => asSa.listNamespacedConfigMap({ namespace: 'sa-test' }));
    assert.ok(Array.isArray(list.items));
  });

  test('kubectl apply from stdin works and reports failures with a non-zero code', async () => {
    const ok = await cp.kubectl(['apply', '-f', '-'], {
      input: 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: from-kubectl, namespace: default }\ndata: { k: v }\n',
    });
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /configmap\/from-kubectl created/);
    const bad = await cp.kubectl(['get', 'configmap', 'does-not-exist']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /NotFound|not found/);
  });
});

describe('control plane restarts', () => {
  let cp: ControlPlane;
  before(async () => {
    cp = await startControlPlane();
  });
  after(() => cp?.stop());

  test('stopping and restarting the API server keeps the data and the port', async () => {
    const core = cp.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'survivor' }, data: { v: '1' } } });
    await cp.stopApiServer();
    await assert.rejects(core.readNamespacedConfigMap({ namespace: 'default', name: 'survivor' }));
    await cp.startApiServer();
    const again = await core.readNamespacedConfigMap({ namespace: 'default', name: 'survivor' });
    assert.equal(again.data?.v, '1');
    await cp.restartApiServer();
    assert.equal((await core.readNamespacedConfigMap({ namespace: 'default', name: 'survivor' })).data?.v, '1');
  });

  test('etcd restarts on its own, keeps its data, and the API server reconnects', async () => {
    const core = cp.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'in-etcd' }, data: { v: '2' } } });
    await cp.stopEtcd();
    // The API server notices: its readiness check of etcd fails (a write would hang until its etcd timeout).
    await eventually('the API server to report etcd down', async () => {
      const readyz = await cp.kubectl(['get', '--raw', '/readyz'], { timeoutMs: 10_000 });
      return readyz.code !== 0 ? true : undefined;
    });
    await cp.startEtcd();
    assert.equal((await core.readNamespacedConfigMap({ namespace: 'default', name: 'in-etcd' })).data?.v, '2');
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'after-etcd-restart' } } });
  });

  test('compactEtcd + an API server restart make a watch from an old resourceVersion get 410 Gone', async () => {
    const core = cp.kubeConfig.makeApiClient(CoreV1Api);
    const cm = await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'compacted' }, data: { n: '0' } } });
    const oldRv = cm.metadata?.resourceVersion;
    assert.ok(oldRv);
    for (let i = 1; i <= 3; i++) {
      await core.patchNamespacedConfigMap(
        { namespace: 'default', name: 'compacted', body: { data: { n: String(i) } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    }
    const revision = await cp.compactEtcd();
    assert.ok(revision > Number(oldRv));
    // The watch cache keeps serving history it already holds; a restart drops it, as in production.
    await cp.restartApiServer();
    const outcome = await new Promise<{ phase: string; code?: number } | { err: unknown }>((resolve) => {
      void new Watch(cp.kubeConfig)
        .watch(
          '/api/v1/namespaces/default/configmaps',
          { resourceVersion: oldRv },
          (phase, obj: { code?: number }) => resolve({ phase, code: obj.code }),
          (err) => resolve({ err }),
        )
        .then((c) => setTimeout(() => c.abort(), 10_000));
    });
    if ('err' in outcome) {
      assert.match(String((outcome.err as { message?: string })?.message ?? outcome.err), /410|too old|Expired/i);
    } else {
      assert.deepEqual(outcome, { phase: 'ERROR', code: 410 });
    }
  });

  test('starting a component that runs already is a no-op; a stopped plane can be stopped again', async () => {
    await cp.startApiServer();
    await cp.startEtcd();
    const ns = await cp.kubectl(['get', 'ns', 'default', '-o', 'name']);
    assert.equal(ns.stdout.trim(), 'namespace/default');
    assert.ok(processesMentioning(cp.dataDir).length > 0, 'the plane runs before it is stopped');
    // Two stops at once: whichever resolves, every component is gone and the data dir removed.
    const first = cp.stop();
    await cp.stop();
    assert.deepEqual(processesMentioning(cp.dataDir), [], 'the second stop() resolved only after every component was gone');
    assert.equal(existsSync(cp.dataDir), false, 'and the data dir removed');
    await first;
    // And once more, after it is stopped: a no-op that resolves.
    await cp.stop();
    assert.deepEqual(processesMentioning(cp.dataDir), []);
  });
});

describe('startControlPlane errors', () => {
  test('a CRD that is not a CRD is refused with what was wrong', async () => {
    await assert.rejects(
      startControlPlane({ crds: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }] }),
      /expected a CustomResourceDefinition.*ConfigMap/,
    );
  });

  test('a component that cannot start fails with its log tail, and leaves nothing running', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'operless-failing-'));
    await assert.rejects(startControlPlane({ apiServerArgs: ['--no-such-flag=1'], readyTimeoutMs: 30_000, dataDir }), (err: Error) => {
      assert.equal(err.name, 'ComponentNotReadyError');
      assert.match(err.message, /kube-apiserver exited/);
      assert.match(err.message, /unknown flag: --no-such-flag/);
      return true;
    });
    assert.deepEqual(processesMentioning(dataDir), [], 'etcd (started first) must have been stopped');
    rmSync(dataDir, { recursive: true, force: true });
  });
});
