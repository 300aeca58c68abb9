/**
 * A real Kubernetes control plane for tests — TypeScript's envtest: etcd, kube-apiserver and,
 * when asked, kube-controller-manager, as local processes on loopback ports.
 *
 * Guarantees:
 * - `startControlPlane()` resolves only when etcd is healthy, the API server's `/readyz` is OK,
 *   the `default` namespace exists, the given CRDs are `Established`, and (with controllers)
 *   the controller manager's `/healthz` is OK.
 * - Authentication and authorization are real: RBAC is on. The admin (token in the kubeconfig)
 *   is in `system:masters`; `identity()` mints a least-privilege user (a client certificate
 *   from the test CA, any name and groups) and `serviceAccount()` a ServiceAccount token
 *   (TokenRequest API), both without restarting anything.
 * - TLS is verified: the kubeconfig carries the test CA that signed the serving certificate.
 * - Each component can be stopped and started on its own, keeping its ports; etcd keeps its
 *   data across API server restarts (and across its own, the data dir is kept).
 * - No orphans (see process.ts): every component dies with the test process, even on SIGKILL.
 * - Failures say what happened, what to do, and quote the component's log tail.
 *
 * This file is the handle a test gets; the steps behind it live beside it, one concept each:
 * control-plane-setup.ts (folders, credentials, ports), control-plane-components.ts (the
 * processes), crd-install.ts, identities.ts, kubectl.ts, etcd-gateway.ts, admin-api.ts.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { bringUp, planeLifecycle } from './control-plane-components.ts';
import type { PlaneLifecycle } from './control-plane-components.ts';
import { allocatePorts, kubeBinaries, planeContext, prepareLayout, writeCredentials } from './control-plane-setup.ts';
import type { ControlPlaneOptions, PlaneContext } from './control-plane-setup.ts';
import { compactEtcd } from './etcd-gateway.ts';
import { certificateIdentity, serviceAccountIdentity } from './identities.ts';
import type { Identity, IdentityIssuer } from './identities.ts';
import { runKubectl } from './kubectl.ts';
import type { KubectlOptions, KubectlResult } from './kubectl.ts';
import type { TestBinaries } from './provision.ts';

export interface ControlPlane {
  /** https://127.0.0.1:PORT */
  readonly server: string;
  /** The admin's kubeconfig (system:masters). */
  readonly kubeconfigPath: string;
  readonly kubeconfigYaml: string;
  readonly kubeConfig: KubeConfig;
  /** The admin identity. */
  readonly admin: Identity;
  /** PEM of the CA that signed the serving and client certificates. */
  readonly caPem: string;
  readonly binDir: string;
  readonly binaries: TestBinaries;
  /** Folder of data, certificates, kubeconfigs and logs (`logs/<component>.log`). */
  readonly dataDir: string;
  readonly etcdEndpoint: string;
  /** Stops every component and removes the temp dir (not a given `dataDir`). Idempotent. */
  stop(): Promise<void>;
  stopApiServer(): Promise<void>;
  startApiServer(): Promise<void>;
  restartApiServer(): Promise<void>;
  stopEtcd(): Promise<void>;
  startEtcd(): Promise<void>;
  stopControllerManager(): Promise<void>;
  startControllerManager(): Promise<void>;
  /** Installs (server-side applies) CRDs and waits until each is Established. */
  installCrds(crds: readonly (string | object)[]): Promise<void>;
  /** Runs the built kubectl as the admin (or `opts.as`). Never throws for a non-zero exit. */
  kubectl(args: readonly string[], opts?: KubectlOptions): Promise<KubectlResult>;
  /** A user with these groups and no permissions beyond what RBAC grants them (client certificate). */
  identity(name: string, groups?: readonly string[]): Promise<Identity>;
  /** A ServiceAccount (created if missing, namespace too) and a token for it (TokenRequest API). */
  serviceAccount(namespace: string, name: string, options?: { expirationSeconds?: number }): Promise<Identity>;
  /**
   * Compacts etcd's history up to its current revision (etcd's HTTP gateway `/v3/kv/compaction`,
   * physical). Returns the compacted revision. A watch that later resumes from an older
   * resourceVersion gets 410 Gone once the API server serves it from etcd (see docs/testenv.md).
   */
  compactEtcd(): Promise<number>;
}

export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const started = Date.now();
  const binaries = await kubeBinaries(options);
  const layout = prepareLayout(options.dataDir);
  const credentials = await writeCredentials(layout.dirs.pki);
  const ports = await allocatePorts();
  const ctx = planeContext(options, binaries, layout, credentials, ports);
  const lifecycle = planeLifecycle(ctx);
  await bringUp(ctx, lifecycle);
  const plane = planeHandle(ctx, lifecycle);
  if (process.env.OPERLESS_TESTENV_VERBOSE) process.stderr.write(`operless testenv: control plane ready in ${Date.now() - started} ms at ${ctx.server}\n`);
  return plane;
}

/** The `ControlPlane` a caller gets: the context's facts, the lifecycle's operations, identities and etcd compaction. */
function planeHandle(ctx: PlaneContext, lifecycle: PlaneLifecycle): ControlPlane {
  const { admin, binaries, credentials, layout, server } = ctx;
  const identityCounter = { n: 0 };
  const issuer: IdentityIssuer = { dir: layout.dirs.identities, server, ca: credentials.ca, api: ctx.api };
  return {
    server,
    kubeconfigPath: admin.kubeconfigPath,
    kubeconfigYaml: admin.kubeconfigYaml,
    kubeConfig: admin.kubeConfig,
    admin,
    caPem: credentials.ca.certPem,
    binDir: binaries.kubeBinDir,
    binaries,
    dataDir: layout.dataDir,
    etcdEndpoint: ctx.etcdEndpoint,
    stop: lifecycle.stopAll,
    stopApiServer: () => lifecycle.stopComponent('kube-apiserver'),
    startApiServer: lifecycle.startApiServer,
    async restartApiServer() {
      await lifecycle.stopComponent('kube-apiserver');
      await lifecycle.startApiServer();
    },
    stopEtcd: () => lifecycle.stopComponent('etcd'),
    startEtcd: lifecycle.startEtcd,
    stopControllerManager: () => lifecycle.stopComponent('kube-controller-manager'),
    startControllerManager: lifecycle.startControllerManager,
    installCrds: lifecycle.installCrds,
    kubectl: (args, opts = {}) => runKubectl(binaries.kubectl, (opts.as ?? admin).kubeconfigPath, args, opts),
    identity: (name, groups = []) => certificateIdentity(issuer, name, groups, ++identityCounter.n),
    serviceAccount: (namespace, name, saOptions = {}) =>
      serviceAccountIdentity(issuer, namespace, name, saOptions.expirationSeconds ?? 3600, ++identityCounter.n),
    compactEtcd: () => compactEtcd(ctx.etcdEndpoint),
  };
}
