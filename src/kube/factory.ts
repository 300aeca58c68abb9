/**
 * Kubernetes access for a function: which credentials, for which cluster, cached across
 * warm invocations (one transport — one connection pool — per source: per cluster id with
 * explicit `sources`, one for the environment's source whatever cluster ids messages name).
 *
 * The source is chosen from the environment, first match wins:
 *
 * | variable                            | source                                                   |
 * | ----------------------------------- | -------------------------------------------------------- |
 * | `OPERLESS_KUBECONFIG_INLINE`        | a kubeconfig document in the variable itself             |
 * | `OPERLESS_KUBECONFIG` / `KUBECONFIG`| a kubeconfig file path                                   |
 * | `OPERLESS_KUBECONFIG_SSM_PARAMETER` | a kubeconfig in SSM Parameter Store (SecureString ok), or a Secrets Manager secret via `/aws/reference/secretsmanager/<id>` |
 * | `OPERLESS_EKS_CLUSTER`              | EKS: endpoint + CA from DescribeCluster, STS-presigned bearer token |
 * | `KUBERNETES_SERVICE_HOST`           | in-cluster service account                               |
 *
 * A kubeconfig given inline or fetched from SSM is checked before use (kubeconfig-policy.ts):
 * an `exec` credential plugin is refused unless `OPERLESS_KUBECONFIG_ALLOW_EXEC=true`, a
 * field naming a local file (`token-file`, `client-key`, …) unless `OPERLESS_KUBECONFIG_ALLOW_FILES=true`;
 * `insecure-skip-tls-verify` logs a warning; a load error never quotes the document.
 *
 * `OPERLESS_CLUSTER` names the cluster id this function serves; a message for another
 * cluster fails with `UnknownClusterError` (it would otherwise be reconciled against the
 * wrong cluster). Unset, the one configured source serves every message.
 */
import { createKubeClient, type BoundKubeClient } from './client.ts';
import { kubeConfigAuth, loadKubeConfig } from './kubeconfig.ts';
import { checkedKubeconfig, commandOfCurrentUser, describeLoadError, execAllowed, execRefusal, KubeconfigRefused } from './kubeconfig-policy.ts';
import { createLogger, type Logger } from '../observability/log.ts';
import { createTransport, type EndpointAuth } from './transport.ts';

export type ClientSource =
  | { readonly type: 'inline'; readonly kubeconfig: string }
  | { readonly type: 'file'; readonly path: string }
  | { readonly type: 'ssm'; readonly parameter: string }
  | { readonly type: 'eks'; readonly cluster: string; readonly region: string | undefined }
  | { readonly type: 'inCluster' };

export class KubeAccessError extends Error {
  override readonly name = 'KubeAccessError';
}

/** A message names a cluster this function has no access configured for. */
export class UnknownClusterError extends Error {
  override readonly name = 'UnknownClusterError';
}

/** Environment variables, as `process.env` holds them. */
export type EnvironmentVariables = Readonly<Record<string, string | undefined>>;

/** Which source the environment selects (pure). */
export function sourceFromEnv(env: EnvironmentVariables): ClientSource {
  if (env.OPERLESS_KUBECONFIG_INLINE) return { type: 'inline', kubeconfig: env.OPERLESS_KUBECONFIG_INLINE };
  const path = env.OPERLESS_KUBECONFIG || env.KUBECONFIG;
  if (path) return { type: 'file', path: path.split(':')[0] as string };
  if (env.OPERLESS_KUBECONFIG_SSM_PARAMETER) return { type: 'ssm', parameter: env.OPERLESS_KUBECONFIG_SSM_PARAMETER };
  if (env.OPERLESS_EKS_CLUSTER) return { type: 'eks', cluster: env.OPERLESS_EKS_CLUSTER, region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION };
  if (env.KUBERNETES_SERVICE_HOST) return { type: 'inCluster' };
  throw new KubeAccessError(
    'no Kubernetes access configured: set OPERLESS_KUBECONFIG (file), OPERLESS_KUBECONFIG_INLINE, OPERLESS_KUBECONFIG_SSM_PARAMETER or OPERLESS_EKS_CLUSTER for this function',
  );
}

export type ClientFactory = (cluster: string) => Promise<BoundKubeClient>;

export interface FactoryOptions {
  /** Explicit sources per cluster id (override the environment). */
  readonly sources?: Readonly<Record<string, ClientSource>>;
  readonly env?: EnvironmentVariables;
  readonly fieldManager?: string;
  /** Loads a kubeconfig from SSM (injectable for tests). */
  readonly loadSsmParameter?: (name: string) => Promise<string>;
  /** Creates EKS access (injectable for tests). */
  readonly eks?: (cluster: string, region: string | undefined) => Promise<EndpointAuth>;
  /** Where the warnings about a client go (insecure-skip-tls-verify); JSON to stdout by default. */
  readonly log?: Logger;
}

/** Cache key of the client built from the environment's source (explicit sources are keyed by cluster id). */
const ENVIRONMENT = 'environment';

export function createClientFactory(options: FactoryOptions = {}): ClientFactory {
  const env = options.env ?? process.env;
  const served = env.OPERLESS_CLUSTER;
  const cache = new Map<string, Promise<BoundKubeClient>>();
  const sourceFor = (cluster: string): ClientSource => {
    const explicit = options.sources?.[cluster];
    if (explicit) return explicit;
    if (options.sources && !served) {
      throw new UnknownClusterError(
        `no Kubernetes access configured for cluster "${cluster}" (configured: ${Object.keys(options.sources).join(', ') || 'none'})`,
      );
    }
    if (served && served !== cluster) {
      throw new UnknownClusterError(
        `message is for cluster "${cluster}" but this function serves OPERLESS_CLUSTER="${served}"; route that cluster's queue to its own function or fix the forwarder's cluster id`,
      );
    }
    return sourceFromEnv(env);
  };
  const build = async (source: ClientSource): Promise<BoundKubeClient> => {
    const fieldManager = options.fieldManager ?? 'operless';
    if (source.type === 'eks') {
      const eks = options.eks ?? (await import('./eks.ts')).eksAccess;
      return createKubeClient(createTransport(await eks(source.cluster, source.region)), { fieldManager });
    }
    // Loaded only for these sources: a function on EKS never pays for it.
    const kc = await loadKubeConfig();
    let auth: EndpointAuth;
    let document: string | undefined;
    try {
      if (source.type === 'file') kc.loadFromFile(source.path);
      else if (source.type === 'inCluster') kc.loadFromCluster();
      else {
        const load = options.loadSsmParameter ?? ((parameter: string) => loadSsmParameter(parameter));
        document = source.type === 'inline' ? source.kubeconfig : await load(source.parameter);
        // Checked before the client loads it: it reads token-file while loading.
        kc.loadFromString(await checkedKubeconfig(document, describe(source), env));
      }
      auth = kubeConfigAuth(kc);
    } catch (err) {
      if (err instanceof KubeconfigRefused) throw new KubeAccessError(err.message);
      // No `cause`: the parser's error carries a code frame of the document (tokens, keys).
      throw new KubeAccessError(`could not load the kubeconfig (${describe(source)}): ${describeLoadError(err, document)}`);
    }
    const command = (source.type === 'inline' || source.type === 'ssm') && !execAllowed(env) ? commandOfCurrentUser(kc) : undefined;
    if (command) throw new KubeAccessError(execRefusal(describe(source), command));
    if (kc.getCurrentCluster()?.skipTLSVerify) {
      (options.log ?? createLogger()).warn(
        "the kubeconfig sets insecure-skip-tls-verify: the API server's certificate is not checked, so anyone on the network path can impersonate it",
        { source: describe(source), server: auth.server },
      );
    }
    return createKubeClient(createTransport(auth), { fieldManager });
  };
  return (cluster: string) => {
    let source: ClientSource;
    try {
      source = sourceFor(cluster);
    } catch (err) {
      return Promise.reject(err);
    }
    // Cached per source, not per message: every cluster id the environment's one source serves
    // shares its client (the cache cannot grow with the cluster ids that messages carry).
    const key = options.sources?.[cluster] ? `cluster:${cluster}` : ENVIRONMENT;
    let client = cache.get(key);
    if (!client) {
      client = build(source);
      cache.set(key, client);
      client.catch(() => cache.delete(key));
    }
    return client;
  };
}

function describe(source: ClientSource): string {
  switch (source.type) {
    case 'inline':
      return 'OPERLESS_KUBECONFIG_INLINE';
    case 'file':
      return `file ${source.path}`;
    case 'ssm':
      return `SSM parameter ${source.parameter}`;
    case 'eks':
      return `EKS cluster ${source.cluster}`;
    case 'inCluster':
      return 'in-cluster service account';
  }
}

/** Reads a (SecureString) parameter with `@aws-sdk/client-ssm`, loaded only when used (the managed Lambda runtime provides it; an image must install it). */
export async function loadSsmParameter(name: string, ssmModule = '@aws-sdk/client-ssm'): Promise<string> {
  let sdk: typeof import('@aws-sdk/client-ssm');
  try {
    sdk = (await import(ssmModule)) as typeof import('@aws-sdk/client-ssm');
  } catch (err) {
    throw new KubeAccessError(
      `cannot read the kubeconfig parameter ${name}: ${ssmModule} is not available (${err instanceof Error ? err.message : String(err)}). ` +
        'The managed Lambda runtime provides it; a container image must install it (npm install @aws-sdk/client-ssm in the task root, docs/deploy.md)',
    );
  }
  const { SSMClient, GetParameterCommand } = sdk;
  const out = await new SSMClient({}).send(new GetParameterCommand({ Name: name, WithDecryption: true }));
  const value = out.Parameter?.Value;
  if (!value) throw new KubeAccessError(`SSM parameter ${name} is empty`);
  return value;
}
