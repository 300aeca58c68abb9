/**
 * What one test control plane fixes once, before any component starts: its options, binaries,
 * folders, test CA and credentials, ports, admin identity and the admin's API calls.
 *
 * Guarantees:
 * - A data dir the caller did not give is a temp dir removed when the process exits (and by
 *   `stop()`); a given one is kept. Every folder and secret is created owner-only (0700 / 0600).
 * - Each control plane gets a fresh test CA, serving certificate (for 127.0.0.1 and localhost),
 *   service-account key pair and random admin token; nothing is shared between planes.
 * - The ports are free when picked; a port taken since then is reported when its component starts.
 */
import { randomBytes, generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminApi } from './admin-api.ts';
import type { AdminApi } from './admin-api.ts';
import { controllerList, LOOPBACK, tokenFileLine } from './config.ts';
import type { ApiServerFiles } from './config.ts';
import { makeIdentity } from './identities.ts';
import type { Identity } from './identities.ts';
import { freePorts } from './ports.ts';
import { removeOnExit } from './process.ts';
import { provision } from './provision.ts';
import type { TestBinaries } from './provision.ts';
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

const ADMIN_USER = 'operless-admin';

/** The folders of one control plane below its data dir. */
export interface PlaneDirs {
  readonly pki: string;
  readonly logs: string;
  readonly etcd: string;
  readonly kcm: string;
  readonly identities: string;
}

/** Where a control plane keeps its files, and whether it owns (and so removes) the folder. */
export interface PlaneLayout {
  readonly dataDir: string;
  readonly ownDir: boolean;
  readonly dirs: PlaneDirs;
  /** Unregisters the exit-time removal of an own data dir. */
  readonly forgetDir: () => void;
}

/** The test CA, the API server's files on disk and the admin's token. */
export interface PlaneCredentials {
  readonly ca: KeyPair;
  readonly files: ApiServerFiles;
  readonly adminToken: string;
}

export interface PlanePorts {
  readonly etcdClient: number;
  readonly etcdPeer: number;
  readonly api: number;
  readonly kcm: number;
}

/** Everything the steps of one control plane share, fixed once at start. */
export interface PlaneContext {
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

export async function kubeBinaries(options: ControlPlaneOptions): Promise<TestBinaries> {
  const binaries = options.binaries ?? (await provision({ targets: ['etcd', 'kube'] })).kube;
  if (!binaries) throw new Error('provisioning returned no Kubernetes binaries; this is a bug in provision.ts');
  return binaries;
}

/** The data dir (a temp dir removed on exit unless one is given) and its sub-folders, created. */
export function prepareLayout(givenDir: string | undefined): PlaneLayout {
  const ownDir = givenDir === undefined;
  const dataDir = givenDir ?? mkdtempSync(join(tmpdir(), 'operless-cp-'));
  const forgetDir = ownDir ? removeOnExit(dataDir) : () => {};
  const dirs: PlaneDirs = {
    pki: join(dataDir, 'pki'),
    logs: join(dataDir, 'logs'),
    etcd: join(dataDir, 'etcd'),
    kcm: join(dataDir, 'kcm-certs'),
    identities: join(dataDir, 'identities'),
  };
  for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true, mode: 0o700 });
  return { dataDir, ownDir, dirs, forgetDir };
}

/** A fresh test CA, the API server's serving certificate, service-account keys and admin token, written to `pki`. */
export async function writeCredentials(pki: string): Promise<PlaneCredentials> {
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

export async function allocatePorts(): Promise<PlanePorts> {
  const [etcdClient = 0, etcdPeer = 0, api = 0, kcm = 0] = await freePorts(4);
  forgetKubectlDiscovery(api);
  return { etcdClient, etcdPeer, api, kcm };
}

/**
 * kubectl caches discovery on disk by host and port (`$KUBECACHEDIR` or `~/.kube/cache`,
 * `discovery/127.0.0.1_<port>`, kept for hours). A port the OS hands out again belonged to an
 * earlier control plane whose CRDs may have served other versions: a kubectl that a test (or a
 * user of the dev loop) runs with the default cache would then ask for a version this API
 * server does not serve and read "the server could not find the requested resource". The
 * port is ours now, so what is cached for it is stale: removed before the API server starts.
 */
export function forgetKubectlDiscovery(apiPort: number, env: NodeJS.ProcessEnv = process.env): void {
  const cacheDir = env.KUBECACHEDIR || join(env.HOME || homedir(), '.kube', 'cache');
  rmSync(join(cacheDir, 'discovery', `${LOOPBACK}_${apiPort}`), { recursive: true, force: true });
}

export function planeContext(
  options: ControlPlaneOptions,
  binaries: TestBinaries,
  layout: PlaneLayout,
  credentials: PlaneCredentials,
  ports: PlanePorts,
): PlaneContext {
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
