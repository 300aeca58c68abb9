/**
 * `EndpointAuth` from a `KubeConfig` of `@kubernetes/client-node`: its current cluster and
 * user, with every auth method it knows (token, token file, client certificates, basic
 * auth, exec plugins, OIDC). `applyToHTTPSOptions` fills in the CA, client certificate,
 * `insecure-skip-tls-verify` and the Authorization header; the transport asks again at most
 * once a minute, so rotating credentials are picked up.
 *
 * `KubeConfig` is only a type here; `loadKubeConfig()` imports the class on first use, so a
 * function that reaches its cluster another way (EKS) never runs it — and an EKS-only
 * bundle may mark `@kubernetes/client-node` external and leave it out altogether (measured:
 * 1.35 MB → 40 KB minified, and roughly half the module-load time). Not supported: a
 * cluster's `proxy-url` (a function reaches its API server directly).
 */
import type https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import type { EndpointAuth, EndpointCredentials } from './endpoint.ts';

/** The `KubeConfig` class, imported on first use (it is large: ~1 MB with its dependencies). */
export async function loadKubeConfig(): Promise<KubeConfig> {
  let module: typeof import('@kubernetes/client-node/dist/config.js');
  try {
    module = await import('@kubernetes/client-node/dist/config.js');
  } catch (err) {
    throw new Error(
      `kubeconfig support (@kubernetes/client-node) is not in this function's bundle (${(err as Error).message}); ` +
        'bundle it, or reach the cluster through OPERLESS_EKS_CLUSTER, which does not need it',
      { cause: err },
    );
  }
  return new module.KubeConfig();
}

export function kubeConfigAuth(kc: KubeConfig): EndpointAuth {
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    throw new Error(
      `the kubeconfig has no current cluster (current-context "${kc.getCurrentContext()}"); set current-context or pass a kubeconfig with one cluster`,
    );
  }
  if (cluster.proxyUrl) {
    throw new Error(
      `the kubeconfig's cluster "${cluster.name}" uses proxy-url, which Operless does not support; give the function a direct route to ${cluster.server}`,
    );
  }
  return {
    server: cluster.server,
    async credentials(): Promise<EndpointCredentials> {
      const opts: https.RequestOptions = {};
      await kc.applyToHTTPSOptions(opts);
      // applyToHTTPSOptions also builds an https.Agent without keep-alive; the transport keeps its own pool.
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(opts.headers ?? {})) if (v !== undefined) headers[k] = String(v);
      if (opts.auth) headers.Authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
      return {
        ca: opts.ca as Buffer | undefined,
        cert: opts.cert as Buffer | undefined,
        key: opts.key as Buffer | undefined,
        rejectUnauthorized: cluster.skipTLSVerify ? false : undefined,
        servername: opts.servername ?? undefined,
        headers,
      };
    },
  };
}
