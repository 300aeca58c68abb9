/**
 * The components of one test control plane as processes: etcd, kube-apiserver and (when asked)
 * kube-controller-manager — their command lines, readiness probes, start, stop and bring-up.
 *
 * Guarantees:
 * - A component starts at most once at a time; starting one that runs is a no-op. Each start
 *   checks its ports are free first and resolves only when its probe passes: etcd healthy, the
 *   API server's `/readyz` OK and the `default` namespace there, the controller manager's `/healthz` OK.
 *   Restarting etcd under a running API server also waits until the API server has reconnected.
 * - A stopped component keeps its ports and (etcd) its data, so it can be started again.
 * - `stopAll` is one stop for every caller (a second call, even during the first, waits for it):
 *   it stops the components in reverse order and removes an own data dir.
 * - `bringUp` stops whatever it started when any step fails.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { apiServerArgs, controllerManagerArgs, etcdArgs, LOOPBACK } from './config.ts';
import type { AdminApi } from './admin-api.ts';
import type { PlaneContext } from './control-plane-setup.ts';
import { installCrdsInto } from './crd-install.ts';
import { etcdHealthy } from './etcd-gateway.ts';
import { httpCall } from './http.ts';
import { assertPortFree } from './ports.ts';
import { startProcess } from './process.ts';
import type { ManagedProcess } from './process.ts';
import { booleanProbe, waitComponentReady } from './readiness.ts';
import type { PortClash } from './readiness.ts';

/** The port clash every control-plane component reports in its log. */
const PORT_CLASH: PortClash = {
  logPattern: /address already in use|bind: /i,
  hint: ' One of its ports is in use by another process: stop that process and try again.',
};

export type ComponentName = 'etcd' | 'kube-apiserver' | 'kube-controller-manager';

/** Starting, stopping and installing into the components of one control plane. */
export interface PlaneLifecycle {
  startEtcd(): Promise<void>;
  startApiServer(): Promise<void>;
  startControllerManager(): Promise<void>;
  stopComponent(name: ComponentName): Promise<void>;
  installCrds(crds: readonly (string | object)[]): Promise<void>;
  stopAll(): Promise<void>;
}

/** The three components' processes, each started at most once at a time and stopped by name. */
export function planeLifecycle(ctx: PlaneContext): PlaneLifecycle {
  const components: Record<ComponentName, ManagedProcess | undefined> = { etcd: undefined, 'kube-apiserver': undefined, 'kube-controller-manager': undefined };
  const cleanupDir = ctx.layout.ownDir ? ctx.layout.dataDir : undefined;

  const launch = async (name: ComponentName, command: string, args: string[], ports: number[], ready: () => Promise<boolean>): Promise<void> => {
    if (components[name]?.isRunning()) return;
    for (const port of ports) await assertPortFree(name, port);
    const proc = startProcess({ name, command, args, logPath: join(ctx.layout.dirs.logs, `${name}.log`), ...(cleanupDir ? { cleanupDir } : {}) });
    components[name] = proc;
    await waitComponentReady(proc, booleanProbe(ready), ctx.readyTimeoutMs, PORT_CLASH);
  };

  /** Starts etcd; when the API server runs, also waits until it has reconnected (readyz OK). */
  const startEtcd = async () => {
    await launch(
      'etcd',
      ctx.binaries.etcd,
      etcdArgs(ctx.layout.dirs.etcd, { client: ctx.ports.etcdClient, peer: ctx.ports.etcdPeer }),
      [ctx.ports.etcdClient, ctx.ports.etcdPeer],
      () => etcdHealthy(ctx.etcdEndpoint),
    );
    const apiServer = components['kube-apiserver'];
    if (apiServer?.isRunning())
      await waitComponentReady(
        apiServer,
        booleanProbe(() => apiServerReady(ctx.api)),
        ctx.readyTimeoutMs,
        PORT_CLASH,
      );
  };

  const startApiServer = () => launch('kube-apiserver', ctx.binaries.kubeApiServer, apiServerArgsOf(ctx), [ctx.ports.api], () => apiServerServing(ctx.api));

  const startControllerManager = async () => {
    if (ctx.controllers.length === 0)
      throw new Error('this control plane was started without controllers; pass `controllers: true` (or a list) to startControlPlane()');
    await launch('kube-controller-manager', ctx.binaries.kubeControllerManager, controllerManagerArgsOf(ctx), [ctx.ports.kcm], () =>
      controllerManagerHealthy(ctx.ports.kcm),
    );
  };

  const stopComponent = async (name: ComponentName) => {
    const proc = components[name];
    components[name] = undefined;
    // etcd's graceful stop waits for the API server's watch streams to end; data is safe
    // without it (writes are in the page cache), so it gets a short grace before SIGKILL.
    await proc?.stop(name === 'etcd' ? 2000 : 10_000);
  };

  // Every call gets the one stop: a second stop() (even while the first is under way) resolves
  // only once every component is gone and the data dir is removed.
  let stopping: Promise<void> | undefined;
  const stopAll = (): Promise<void> => {
    stopping ??= (async () => {
      await stopComponent('kube-controller-manager');
      await stopComponent('kube-apiserver');
      await stopComponent('etcd');
      if (ctx.layout.ownDir) rmSync(ctx.layout.dataDir, { recursive: true, force: true, maxRetries: 3 });
      ctx.layout.forgetDir();
    })();
    return stopping;
  };

  const installCrds = (crds: readonly (string | object)[]) => installCrdsInto(ctx.api, crds, ctx.readyTimeoutMs);
  return { startEtcd, startApiServer, startControllerManager, stopComponent, installCrds, stopAll };
}

function apiServerArgsOf(ctx: PlaneContext): string[] {
  const { options } = ctx;
  return apiServerArgs({
    port: ctx.ports.api,
    etcdClientPort: ctx.ports.etcdClient,
    files: ctx.credentials.files,
    ...(options.watchCache !== undefined ? { watchCache: options.watchCache } : {}),
    ...(options.apiServerArgs ? { extraArgs: options.apiServerArgs } : {}),
  });
}

function controllerManagerArgsOf(ctx: PlaneContext): string[] {
  return controllerManagerArgs({
    kubeconfigPath: ctx.admin.kubeconfigPath,
    controllers: ctx.controllers,
    port: ctx.ports.kcm,
    certDir: ctx.layout.dirs.kcm,
    serviceAccountPrivateKey: ctx.credentials.files.serviceAccountPrivateKey,
    rootCa: ctx.credentials.files.clientCa,
    ...(ctx.options.controllerManagerArgs ? { extraArgs: ctx.options.controllerManagerArgs } : {}),
  });
}

async function apiServerReady(api: AdminApi): Promise<boolean> {
  return (await api('/readyz')).status === 200;
}

/** Ready, and the `default` namespace exists (a post-start hook creates it shortly after readyz; clients expect it). */
async function apiServerServing(api: AdminApi): Promise<boolean> {
  if (!(await apiServerReady(api))) return false;
  return (await api('/api/v1/namespaces/default')).status === 200;
}

/** Its serving cert is self-signed in kcm-certs; only liveness matters here. */
async function controllerManagerHealthy(port: number): Promise<boolean> {
  const res = await httpCall(`https://${LOOPBACK}:${port}/healthz`, { timeoutMs: 2000, insecure: true });
  return res.status === 200;
}

/** Starts etcd, the API server, the CRDs and (when asked) the controller manager; on any failure stops what started. */
export async function bringUp(ctx: PlaneContext, lifecycle: PlaneLifecycle): Promise<void> {
  try {
    await lifecycle.startEtcd();
    await lifecycle.startApiServer();
    // CRDs before the controller manager: its garbage collector only rediscovers resources every 30 s.
    if (ctx.options.crds && ctx.options.crds.length > 0) await lifecycle.installCrds(ctx.options.crds);
    if (ctx.controllers.length > 0) await lifecycle.startControllerManager();
  } catch (err) {
    await lifecycle.stopAll();
    throw err;
  }
}
