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
 */
import { randomBytes, generateKeyPairSync } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import {
  apiServerArgs,
  controllerList,
  controllerManagerArgs,
  etcdArgs,
  kubeconfigYaml,
  LOOPBACK,
  tokenFileLine,
} from './config.ts';
import type { ApiServerFiles } from './config.ts';
import { httpCall, jsonBody } from './http.ts';
import type { HttpResponse } from './http.ts';
import { assertPortFree, freePorts } from './ports.ts';
import { removeOnExit, sleep, startProcess } from './process.ts';
import type { ManagedProcess } from './process.ts';
import { provision } from './provision.ts';
import type { TestBinaries } from './provision.ts';
import { booleanProbe, ComponentNotReadyError, waitComponentReady } from './readiness.ts';
import type { PortClash } from './readiness.ts';
import { createCertificateAuthority, issueCertificate } from './x509.ts';
import type { KeyPair } from './x509.ts';

export interface ControlPlaneOptions {
  /**
   * Run kube-controller-manager: `true` for the garbage collector and namespace controllers,
   * or the exact controller names (e.g. `WORKLOAD_CONTROLLERS` adds Deployments/ReplicaSets).
   */
  readonly controllers?: boolean | readonly string[];
  /** CRDs to install before anything else starts: YAML file paths (multi-document) or objects. */
  readonly crds?: readonly (string | object)[];
  /** Where etcd data, certificates, kubeconfig and logs go. A temp dir (removed on stop) by default; a given dir is kept. */
  readonly dataDir?: string;
  /** The API server's watch cache (default true, as in real clusters). */
  readonly watchCache?: boolean;
  /** Extra `--flag=value`s per component, overriding defaults of the same name. */
  readonly apiServerArgs?: readonly string[];
  readonly controllerManagerArgs?: readonly string[];
  /** How long each component may take to become ready (default 60 s). */
  readonly readyTimeoutMs?: number;
  /** Use these binaries instead of provisioning them. */
  readonly binaries?: TestBinaries;
}

export interface KubectlResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface KubectlOptions {
  /** Written to kubectl's stdin (for `apply -f -`). */
  readonly input?: string;
  /** Run as this identity instead of the admin. */
  readonly as?: Identity;
  readonly timeoutMs?: number;
}

/** Credentials for one user of the control plane. */
export interface Identity {
  /** The user name the API server sees (e.g. `system:serviceaccount:ns:name`). */
  readonly user: string;
  readonly groups: readonly string[];
  readonly kubeConfig: KubeConfig;
  readonly kubeconfigPath: string;
  readonly kubeconfigYaml: string;
  /** The bearer token, for token identities (the admin and service accounts). */
  readonly token?: string;
}

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

const ADMIN_USER = 'operless-admin';
const FIELD_MANAGER = 'operless-testenv';
/** The port clash every control-plane component reports in its log. */
const PORT_CLASH: PortClash = {
  logPattern: /address already in use|bind: /i,
  hint: ' One of its ports is in use by another process: stop that process and try again.',
};

type ComponentName = 'etcd' | 'kube-apiserver' | 'kube-controller-manager';
type AdminApi = (path: string, init?: { method?: string; body?: string; contentType?: string }) => Promise<HttpResponse>;

/** The folders of one control plane below its data dir. */
interface PlaneDirs {
  readonly pki: string;
  readonly logs: string;
  readonly etcd: string;
  readonly kcm: string;
  readonly identities: string;
}

/** Where a control plane keeps its files, and whether it owns (and so removes) the folder. */
interface PlaneLayout {
  readonly dataDir: string;
  readonly ownDir: boolean;
  readonly dirs: PlaneDirs;
  /** Unregisters the exit-time removal of an own data dir. */
  readonly forgetDir: () => void;
}

/** The test CA, the API server's files on disk and the admin's token. */
interface PlaneCredentials {
  readonly ca: KeyPair;
  readonly files: ApiServerFiles;
  readonly adminToken: string;
}

interface PlanePorts {
  readonly etcdClient: number;
  readonly etcdPeer: number;
  readonly api: number;
  readonly kcm: number;
}

/** Everything the steps of one control plane share, fixed once at start. */
interface PlaneContext {
  readonly options: ControlPlaneOptions;
  readonly binaries: TestBinaries;
  readonly readyTimeoutMs: number;
  readonly layout: PlaneLayout;
  readonly credentials: PlaneCredentials;
  readonly ports: PlanePorts;
  readonly server: string;
  readonly etcdEndpoint: string;
  readonly admin: Identity;
  readonly controllers: readonly string[];
  readonly api: AdminApi;
}

/** Starting, stopping and installing into the components of one control plane. */
interface PlaneLifecycle {
  startEtcd(): Promise<void>;
  startApiServer(): Promise<void>;
  startControllerManager(): Promise<void>;
  stopComponent(name: ComponentName): Promise<void>;
  installCrds(crds: readonly (string | object)[]): Promise<void>;
  stopAll(): Promise<void>;
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

async function kubeBinaries(options: ControlPlaneOptions): Promise<TestBinaries> {
  const binaries = options.binaries ?? (await provision({ targets: ['etcd', 'kube'] })).kube;
  if (!binaries) throw new Error('provisioning returned no Kubernetes binaries; this is a bug in provision.ts');
  return binaries;
}

/** The data dir (a temp dir removed on exit unless one is given) and its sub-folders, created. */
function prepareLayout(givenDir: string | undefined): PlaneLayout {
  const ownDir = givenDir === undefined;
  const dataDir = givenDir ?? mkdtempSync(join(tmpdir(), 'operless-cp-'));
  const forgetDir = ownDir ? removeOnExit(dataDir) : () => {};
  const dirs: PlaneDirs = { pki: join(dataDir, 'pki'), logs: join(dataDir, 'logs'), etcd: join(dataDir, 'etcd'), kcm: join(dataDir, 'kcm-certs'), identities: join(dataDir, 'identities') };
  for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true, mode: 0o700 });
  return { dataDir, ownDir, dirs, forgetDir };
}

/** A fresh test CA, the API server's serving certificate, service-account keys and admin token, written to `pki`. */
async function writeCredentials(pki: string): Promise<PlaneCredentials> {
  const ca = await createCertificateAuthority('operless-test-ca');
  const serving = await issueCertificate(ca, { commonName: 'kube-apiserver', hosts: [LOOPBACK, 'localhost'], usage: 'server' });
  const sa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const adminToken = randomBytes(24).toString('hex');
  const files: ApiServerFiles = {
    servingCert: join(pki, 'apiserver.crt'),
    servingKey: join(pki, 'apiserver.key'),
    certDir: pki,
    clientCa: join(pki, 'ca.crt'),
    tokenFile: join(pki, 'tokens.csv'),
    serviceAccountPublicKey: join(pki, 'sa.pub'),
    serviceAccountPrivateKey: join(pki, 'sa.key'),
  };
  const write = (path: string, text: string) => writeFileSync(path, text, { mode: 0o600 });
  write(files.servingCert, serving.certPem);
  write(files.servingKey, serving.keyPem);
  write(files.clientCa, ca.certPem);
  write(files.tokenFile, tokenFileLine(adminToken, ADMIN_USER, ['system:masters']));
  write(files.serviceAccountPublicKey, sa.publicKey.export({ type: 'spki', format: 'pem' }).toString());
  write(files.serviceAccountPrivateKey, sa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  return { ca, files, adminToken };
}

async function allocatePorts(): Promise<PlanePorts> {
  const [etcdClient = 0, etcdPeer = 0, api = 0, kcm = 0] = await freePorts(4);
  return { etcdClient, etcdPeer, api, kcm };
}

function planeContext(options: ControlPlaneOptions, binaries: TestBinaries, layout: PlaneLayout, credentials: PlaneCredentials, ports: PlanePorts): PlaneContext {
  const server = `https://${LOOPBACK}:${ports.api}`;
  const { ca, adminToken } = credentials;
  return {
    options,
    binaries,
    readyTimeoutMs: options.readyTimeoutMs ?? 60_000,
    layout,
    credentials,
    ports,
    server,
    etcdEndpoint: `http://${LOOPBACK}:${ports.etcdClient}`,
    admin: makeIdentity(layout.dirs.identities, 'admin', server, ca.certPem, ADMIN_USER, ['system:masters'], { token: adminToken }),
    controllers: controllerList(options.controllers),
    api: adminApi(server, ca.certPem, adminToken),
  };
}

/** Requests to the API server as the admin, verifying its certificate against the test CA. */
function adminApi(server: string, caPem: string, adminToken: string): AdminApi {
  return (path, init = {}) =>
    httpCall(`${server}${path}`, {
      method: init.method ?? 'GET',
      ca: caPem,
      headers: {
        authorization: `Bearer ${adminToken}`,
        accept: 'application/json',
        ...(init.contentType ? { 'content-type': init.contentType } : {}),
      },
      ...(init.body !== undefined ? { body: init.body } : {}),
    });
}

/** The three components' processes, each started at most once at a time and stopped by name. */
function planeLifecycle(ctx: PlaneContext): PlaneLifecycle {
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
    await launch('etcd', ctx.binaries.etcd, etcdArgs(ctx.layout.dirs.etcd, { client: ctx.ports.etcdClient, peer: ctx.ports.etcdPeer }), [ctx.ports.etcdClient, ctx.ports.etcdPeer], () => etcdHealthy(ctx.etcdEndpoint));
    const apiServer = components['kube-apiserver'];
    if (apiServer?.isRunning()) await waitComponentReady(apiServer, booleanProbe(() => apiServerReady(ctx.api)), ctx.readyTimeoutMs, PORT_CLASH);
  };

  const startApiServer = () => launch('kube-apiserver', ctx.binaries.kubeApiServer, apiServerArgsOf(ctx), [ctx.ports.api], () => apiServerServing(ctx.api));

  const startControllerManager = async () => {
    if (ctx.controllers.length === 0) throw new Error('this control plane was started without controllers; pass `controllers: true` (or a list) to startControlPlane()');
    await launch('kube-controller-manager', ctx.binaries.kubeControllerManager, controllerManagerArgsOf(ctx), [ctx.ports.kcm], () => controllerManagerHealthy(ctx.ports.kcm));
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

async function etcdHealthy(etcdEndpoint: string): Promise<boolean> {
  const res = await httpCall(`${etcdEndpoint}/health`, { timeoutMs: 2000 });
  return res.status === 200 && jsonBody<{ health?: string }>(res).health === 'true';
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
async function bringUp(ctx: PlaneContext, lifecycle: PlaneLifecycle): Promise<void> {
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

/** Server-side applies each CRD, then waits until each is Established and every served version lists. */
async function installCrdsInto(api: AdminApi, crds: readonly (string | object)[], timeoutMs: number): Promise<void> {
  const objects = crds.flatMap(loadCrdDocuments);
  for (const crd of objects) {
    const name = crdName(crd);
    const res = await api(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${encodeURIComponent(name)}?fieldManager=${FIELD_MANAGER}&force=true`, {
      method: 'PATCH',
      contentType: 'application/apply-patch+yaml',
      body: JSON.stringify(crd),
    });
    if (res.status >= 300) throw new Error(`installing CRD ${name} failed: HTTP ${res.status}: ${apiMessage(res)}. Fix the CRD manifest.`);
  }
  for (const crd of objects) {
    await waitEstablished(api, crdName(crd), timeoutMs);
    // Established is not yet usable: the new resource's storage (watch cache) answers
    // 429 "storage is (re)initializing" for a moment. Wait until a LIST of each served version succeeds.
    for (const path of crdListPaths(crd)) await waitServed(api, path, timeoutMs);
  }
}

/** The `ControlPlane` a caller gets: the context's facts, the lifecycle's operations, identities and etcd compaction. */
function planeHandle(ctx: PlaneContext, lifecycle: PlaneLifecycle): ControlPlane {
  const { admin, binaries, credentials, layout, server } = ctx;
  const identityCounter = { n: 0 };
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
    identity: (name, groups = []) => certificateIdentity(ctx, name, groups, ++identityCounter.n),
    serviceAccount: (namespace, name, saOptions = {}) => serviceAccountIdentity(ctx, namespace, name, saOptions.expirationSeconds ?? 3600, ++identityCounter.n),
    compactEtcd: () => compactEtcd(ctx.etcdEndpoint),
  };
}

/** A user with a client certificate from the test CA: `name` and `groups`, nothing else. */
async function certificateIdentity(ctx: PlaneContext, name: string, groups: readonly string[], serial: number): Promise<Identity> {
  const { ca } = ctx.credentials;
  const cert = await issueCertificate(ca, { commonName: name, organizations: groups, usage: 'client' });
  return makeIdentity(ctx.layout.dirs.identities, `user-${serial}`, ctx.server, ca.certPem, name, groups, {
    clientCertPem: cert.certPem,
    clientKeyPem: cert.keyPem,
  });
}

/** A ServiceAccount (created if missing, namespace too) and a token for it from the TokenRequest API. */
async function serviceAccountIdentity(ctx: PlaneContext, namespace: string, name: string, expirationSeconds: number, serial: number): Promise<Identity> {
  const { api } = ctx;
  await ensureObject(api, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  await ensureObject(api, `/api/v1/namespaces/${namespace}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name, namespace },
  });
  const res = await api(`/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`, {
    method: 'POST',
    contentType: 'application/json',
    body: JSON.stringify({
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds },
    }),
  });
  if (res.status !== 201) throw new Error(`TokenRequest for ServiceAccount ${namespace}/${name} failed: HTTP ${res.status}: ${apiMessage(res)}`);
  const token = jsonBody<{ status: { token: string } }>(res).status.token;
  const user = `system:serviceaccount:${namespace}:${name}`;
  return makeIdentity(ctx.layout.dirs.identities, `sa-${namespace}-${name}-${serial}`, ctx.server, ctx.credentials.ca.certPem, user, ['system:serviceaccounts', `system:serviceaccounts:${namespace}`], { token });
}

/** Compacts etcd up to its current revision (physical); returns that revision. */
async function compactEtcd(etcdEndpoint: string): Promise<number> {
  const range = await httpCall(`${etcdEndpoint}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: 'AA==', limit: 1 }) });
  const revision = Number(jsonBody<{ header?: { revision?: string } }>(range).header?.revision);
  if (!Number.isFinite(revision) || revision < 1) throw new Error(`etcd did not report its revision: ${range.body.slice(0, 200)}`);
  const res = await httpCall(`${etcdEndpoint}/v3/kv/compaction`, { method: 'POST', body: JSON.stringify({ revision: String(revision), physical: true }) });
  if (res.status !== 200 && !res.body.includes('required revision has been compacted')) {
    throw new Error(`etcd compaction at revision ${revision} failed: HTTP ${res.status}: ${res.body.slice(0, 300)}`);
  }
  return revision;
}

function makeIdentity(
  dir: string,
  fileName: string,
  server: string,
  caPem: string,
  user: string,
  groups: readonly string[],
  credentials: { token: string } | { clientCertPem: string; clientKeyPem: string },
): Identity {
  const yaml = kubeconfigYaml({ server, caPem, user, credentials });
  const path = join(dir, `${fileName}.kubeconfig`);
  writeFileSync(path, yaml, { mode: 0o600 });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(yaml);
  return { user, groups, kubeConfig, kubeconfigPath: path, kubeconfigYaml: yaml, ...('token' in credentials ? { token: credentials.token } : {}) };
}

/** Reads CRD manifests: a path (YAML, multi-document) or an object. Exported for unit tests. */
export function loadCrdDocuments(source: string | object): Record<string, unknown>[] {
  if (typeof source !== 'string') return [source as Record<string, unknown>];
  let text: string;
  try {
    text = readFileSync(source, 'utf8');
  } catch (err) {
    throw new Error(`cannot read CRD file ${source}: ${(err as Error).message}`);
  }
  return parseAllDocuments(text).flatMap((doc, i) => {
    if (doc.errors.length > 0) throw new Error(`CRD file ${source}, document ${i + 1}: ${doc.errors[0]?.message}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return [];
    return [value as Record<string, unknown>];
  });
}

function crdName(crd: Record<string, unknown>): string {
  const kind = crd.kind;
  const name = (crd.metadata as { name?: unknown } | undefined)?.name;
  if (kind !== 'CustomResourceDefinition' || typeof name !== 'string') {
    throw new Error(`expected a CustomResourceDefinition with metadata.name, got kind "${String(kind)}" name "${String(name)}"`);
  }
  return name;
}

async function waitEstablished(api: (path: string) => Promise<HttpResponse>, name: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const res = await api(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
    if (res.status === 200) {
      const conditions = jsonBody<{ status?: { conditions?: { type: string; status: string; message?: string }[] } }>(res).status?.conditions ?? [];
      if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) return;
      last = conditions.map((c) => `${c.type}=${c.status}${c.message ? ` (${c.message})` : ''}`).join(', ');
    }
    await sleep(100);
  }
  throw new ComponentNotReadyError(`CRD ${name} was not Established within ${timeoutMs / 1000} s (conditions: ${last || 'none'}). Check its names and schema.`);
}

/** A LIST path per served version of a CRD. Exported for unit tests. */
export function crdListPaths(crd: Record<string, unknown>): string[] {
  const spec = crd.spec as { group?: string; names?: { plural?: string }; versions?: { name?: string; served?: boolean }[] } | undefined;
  if (!spec?.group || !spec.names?.plural) return [];
  return (spec.versions ?? []).filter((v) => v.served !== false && v.name).map((v) => `/apis/${spec.group}/${v.name}/${spec.names?.plural}?limit=1`);
}

async function waitServed(api: (path: string) => Promise<HttpResponse>, path: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: HttpResponse | undefined;
  while (Date.now() < deadline) {
    last = await api(path);
    if (last.status === 200) return;
    await sleep(100);
  }
  throw new ComponentNotReadyError(`the CRD resource ${path} was Established but not served within ${timeoutMs / 1000} s (last: HTTP ${last?.status}: ${last ? apiMessage(last) : ''})`);
}

async function ensureObject(api: AdminApi, collection: string, body: object): Promise<void> {
  const res = await api(collection, { method: 'POST', body: JSON.stringify(body), contentType: 'application/json' });
  if (res.status !== 201 && res.status !== 409) throw new Error(`creating ${collection} failed: HTTP ${res.status}: ${apiMessage(res)}`);
}

function apiMessage(res: HttpResponse): string {
  try {
    return (JSON.parse(res.body) as { message?: string }).message ?? res.body.slice(0, 300);
  } catch {
    return res.body.slice(0, 300);
  }
}

function runKubectl(kubectl: string, kubeconfigPath: string, args: readonly string[], opts: KubectlOptions): Promise<KubectlResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(kubectl, [`--kubeconfig=${kubeconfigPath}`, ...args], { stdio: ['pipe', 'pipe', 'pipe'], timeout: opts.timeoutMs ?? 60_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', (err) => reject(new Error(`could not run kubectl (${kubectl}): ${err.message}`)));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}
