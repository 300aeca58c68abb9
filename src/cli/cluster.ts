/**
 * The cluster a CLI command talks to: the kubeconfig of the `Target` (flag, KUBECONFIG, or a
 * running `operless dev`; else the default `~/.kube/config` / in-cluster), its `--context`,
 * and optional impersonation (`--as`, `--as-group`, what kubectl sends as `Impersonate-*`
 * headers) — all through the runtime's own transport and client from `src/kube/`.
 *
 * Guarantees: nothing is contacted until a request is made; a missing context or an
 * unreadable kubeconfig fails with one line saying which file and what to pass instead.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';
import { createKubeClient, type BoundKubeClient } from '../kube/client.ts';
import { kubeConfigAuth, loadKubeConfig } from '../kube/kubeconfig.ts';
import { createTransport, type EndpointAuth, type KubeTransport } from '../kube/transport.ts';
import { UsageError, type OptionSpec, type ParsedArgs } from './args.ts';
import type { Target } from './target.ts';

export interface Impersonation {
  readonly user: string;
  readonly groups: readonly string[];
}

export interface ClusterConnection {
  readonly server: string;
  /** Where the credentials came from, e.g. `.operless/kubeconfig (context dev)`. */
  readonly source: string;
  readonly transport: KubeTransport;
  readonly client: BoundKubeClient;
  close(): Promise<void>;
}

/** `--as` / `--as-group`, as kubectl spells them. */
export const IMPERSONATION_OPTIONS: OptionSpec = {
  as: { type: 'string', description: 'Act as this user (impersonation; needs the impersonate permission)', placeholder: 'user' },
  'as-group': { type: 'string', multiple: true, description: 'Act as a member of this group (repeatable; needs --as)', placeholder: 'group' },
};

export function impersonationFrom(args: ParsedArgs): Impersonation | undefined {
  const user = typeof args.values.as === 'string' && args.values.as ? args.values.as : undefined;
  const groups = (args.values['as-group'] as string[] | undefined) ?? [];
  if (!user && groups.length > 0) throw new UsageError('--as-group needs --as <user> (Kubernetes impersonates a user and, with it, groups)');
  return user ? { user, groups } : undefined;
}

/** Adds `Impersonate-User` / `Impersonate-Group` to every request of `auth`. */
export function impersonating(auth: EndpointAuth, who: Impersonation): EndpointAuth {
  return {
    ...auth,
    async credentials() {
      const base = await auth.credentials();
      const headers: Record<string, string | string[]> = { ...base.headers, 'Impersonate-User': who.user };
      // One header line per group (the API server does not split a comma-joined value);
      // node:http sends an array value as repeated lines, and the transport passes headers through.
      if (who.groups.length > 0) headers['Impersonate-Group'] = [...who.groups];
      return { ...base, headers: headers as Record<string, string> };
    },
  };
}

/** False when no kubeconfig is configured anywhere (flag, KUBECONFIG, dev loop, ~/.kube/config, in-cluster). */
export function hasClusterConfig(target: Target, env: NodeJS.ProcessEnv = process.env): boolean {
  if (target.kubeconfigPath) return true;
  if (env.KUBERNETES_SERVICE_HOST) return true;
  return existsSync(join(env.HOME ?? homedir(), '.kube', 'config'));
}

export async function connectCluster(target: Target, impersonate?: Impersonation): Promise<ClusterConnection> {
  const kc = await loadKubeConfig();
  let source: string;
  if (target.kubeconfigPath) {
    const paths = target.kubeconfigPath.split(':').filter(Boolean);
    const missing = paths.find((p) => !existsSync(p));
    if (missing) throw new UsageError(`kubeconfig ${missing} does not exist: pass --kubeconfig <path> or set KUBECONFIG`);
    try {
      for (const [i, p] of paths.entries()) {
        if (i === 0) kc.loadFromFile(p);
        else {
          const extra = await loadKubeConfig();
          extra.loadFromFile(p);
          kc.mergeConfig(extra);
        }
      }
    } catch (err) {
      throw new UsageError(`cannot read kubeconfig ${target.kubeconfigPath}: ${(err as Error).message}`);
    }
    source = paths.map((p) => relative(process.cwd(), p) || p).join(':');
  } else {
    kc.loadFromDefault();
    source = 'default kubeconfig (~/.kube/config or in-cluster)';
  }
  if (target.context) {
    if (!kc.getContextObject(target.context)) {
      const known =
        kc
          .getContexts()
          .map((c) => c.name)
          .join(', ') || 'none';
      throw new UsageError(`the kubeconfig has no context "${target.context}" (contexts: ${known})`);
    }
    kc.setCurrentContext(target.context);
  }
  if (!kc.getCurrentCluster()) {
    throw new UsageError(
      `no cluster configured in ${source}: pass --kubeconfig <path> [--context <name>], set KUBECONFIG, or run next to a running \`operless dev\``,
    );
  }
  const base = kubeConfigAuth(kc);
  const auth = impersonate ? impersonating(base, impersonate) : base;
  const transport = createTransport(auth, { userAgent: 'operless-cli' });
  const context = kc.getCurrentContext();
  return {
    server: transport.server,
    source: context ? `${source}, context ${context}` : source,
    transport,
    client: createKubeClient(transport, { fieldManager: 'operless-cli' }),
    close: () => transport.close(),
  };
}
