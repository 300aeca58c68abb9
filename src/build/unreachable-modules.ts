/**
 * Modules a bundle of Operless code would carry but never run, and the esbuild plugin that
 * replaces them with small stubs.
 *
 * Operless uses `@kubernetes/client-node` only for `KubeConfig` — load a kubeconfig and
 * `applyToHTTPSOptions` for `node:https` (src/kube/kubeconfig.ts). Its `config.js` also
 * imports, for code paths Operless never reaches:
 * - `undici` (the largest part of a function bundle without stubs): `createDispatcher`,
 *   called only by `applySecurityAuthentication`, which only the generated API clients of
 *   `makeApiClient` call;
 * - `socks`: `createSocksConnector`, called only by `createDispatcher`;
 * - `socks-proxy-agent`, `hpagent`: the `proxy-url` branch of `createAgent`, which
 *   `kubeConfigAuth` never reaches: it refuses a cluster with `proxy-url` first;
 * - `./gen/index.js` (the generated models): `createConfiguration` and
 *   `ServerConfiguration`, used only by `makeApiClient`;
 * - `./azure_auth.js`, `./gcp_auth.js` (with `jsonpath-plus`, which only they use): the
 *   `azure` and `gcp` kubeconfig auth-providers, which Kubernetes removed from client-go and
 *   kubectl in 1.26 (replaced by the exec plugins kubelogin and gke-gcloud-auth-plugin, which
 *   exec_auth.js runs). `KubeConfig` constructs every authenticator, so these stubs are
 *   authenticators: each claims its provider's name, and authenticating with it throws the
 *   stub's error (kubectl refuses such a kubeconfig too), so the user gets that error rather
 *   than an unauthenticated request.
 *
 * The size of each: docs/benchmarks.md, "Function bundle and cold start".
 *
 * Guarantees:
 * - a module is stubbed only when `@kubernetes/client-node/dist/config.js` imports it, so
 *   another importer of the same package (our code, the AWS SDK) still gets the real one;
 * - every stub export the importer names exists (esbuild fails the build on a missing one,
 *   so an upgrade of client-node that imports more cannot slip through silently);
 * - a stub does nothing when imported; using any export throws an Error that names the
 *   module, what it would have done and why it was left out.
 * test/unit/build/unreachable-modules.test.ts checks the reachability claims against the
 * installed client-node source.
 */
import type { Plugin } from 'esbuild';

export type StubExportKind = 'class' | 'function' | 'static' | 'authenticator';

export interface ModuleStub {
  /** The specifier as written in the importer, e.g. `undici` or `./gen/index.js`. */
  readonly specifier: string;
  /**
   * Exports the importer uses, and how it uses each: `new X()`, `x()`, `X.method()` (static),
   * or a kubeconfig authenticator class (`authenticator`: constructed, asked `isAuthProvider`).
   */
  readonly exports: Readonly<Record<string, StubExportKind>>;
  /** The methods of a `static` export. */
  readonly staticMethods?: readonly string[];
  /** What the module would do, for the error. */
  readonly purpose: string;
  /** `authenticator` exports: the kubeconfig `auth-provider` name they claim. */
  readonly authProvider?: string;
  /** Why it is left out, when not the default reason (Operless reaches the API server through node:https). */
  readonly why?: string;
}

const REMOVED_AUTH_PROVIDER =
  'Kubernetes removed this kubeconfig auth-provider from client-go and kubectl in 1.26; ' +
  'use its exec plugin instead (users[].user.exec: kubelogin for Azure, gke-gcloud-auth-plugin for GKE)';

/** The importer whose imports are stubbed. */
export const STUBBED_IMPORTER = /[\\/]@kubernetes[\\/]client-node[\\/]dist[\\/]config\.js$/;

export const UNREACHABLE_MODULES: readonly ModuleStub[] = [
  {
    specifier: 'undici',
    exports: { Agent: 'class', ProxyAgent: 'class' },
    purpose: 'the fetch dispatcher of the generated API clients (KubeConfig.makeApiClient)',
  },
  {
    specifier: 'socks',
    exports: { SocksClient: 'static' },
    staticMethods: ['createConnection'],
    purpose: 'SOCKS proxy connections of the generated API clients (a cluster proxy-url)',
  },
  {
    specifier: 'socks-proxy-agent',
    exports: { SocksProxyAgent: 'class' },
    purpose: 'a SOCKS proxy agent for a cluster proxy-url',
  },
  {
    specifier: 'hpagent',
    exports: { HttpProxyAgent: 'class', HttpsProxyAgent: 'class' },
    purpose: 'an HTTP(S) proxy agent for a cluster proxy-url',
  },
  {
    specifier: './gen/index.js',
    exports: { createConfiguration: 'function', ServerConfiguration: 'class' },
    purpose: 'the generated API clients and models (KubeConfig.makeApiClient)',
  },
  {
    specifier: './azure_auth.js',
    exports: { AzureAuth: 'authenticator' },
    authProvider: 'azure',
    purpose: 'the azure kubeconfig auth-provider',
    why: REMOVED_AUTH_PROVIDER,
  },
  {
    specifier: './gcp_auth.js',
    exports: { GoogleCloudPlatformAuth: 'authenticator' },
    authProvider: 'gcp',
    purpose: 'the gcp kubeconfig auth-provider',
    why: REMOVED_AUTH_PROVIDER,
  },
];

const NAMESPACE = 'operless-unreachable';

/** The message of the Error every export of the stub of `stub` throws when used. */
export function stubErrorMessage(stub: ModuleStub): string {
  const why =
    stub.why ??
    'Operless functions and the forwarder reach the API server through node:https (src/kube/transport.ts) ' +
      'and do not support a kubeconfig proxy-url or @kubernetes/client-node API clients';
  return (
    `${stub.specifier} (${stub.purpose}) is not bundled by Operless: ${why}. ` +
    'To use it anyway, bundle without the operless-unreachable-modules esbuild plugin.'
  );
}

/** ES module source of the stub for `stub`. */
export function stubSource(stub: ModuleStub): string {
  const lines = [`const message = ${JSON.stringify(stubErrorMessage(stub))};`, 'function unsupported() { throw new Error(message); }'];
  for (const [name, kind] of Object.entries(stub.exports)) {
    if (kind === 'class') lines.push(`export class ${name} { constructor() { unsupported(); } }`);
    else if (kind === 'authenticator') {
      lines.push(
        `export class ${name} { isAuthProvider(user) { return user?.authProvider?.name === ${JSON.stringify(stub.authProvider)}; } async applyAuthentication() { unsupported(); } }`,
      );
    } else if (kind === 'function') lines.push(`export function ${name}() { unsupported(); }`);
    else lines.push(`export const ${name} = { ${(stub.staticMethods ?? []).map((m) => `${m}() { unsupported(); }`).join(', ')} };`);
  }
  return `${lines.join('\n')}\n`;
}

/** The esbuild plugin: stubs `modules` where `STUBBED_IMPORTER` imports them. */
export function stubUnreachableModules(modules: readonly ModuleStub[] = UNREACHABLE_MODULES): Plugin {
  const bySpecifier = new Map(modules.map((m) => [m.specifier, m]));
  const escaped = modules.map((m) => m.specifier.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
  return {
    name: 'operless-unreachable-modules',
    setup(build) {
      build.onResolve({ filter: new RegExp(`^(${escaped.join('|')})$`) }, (args) => {
        if (!STUBBED_IMPORTER.test(args.importer)) return undefined;
        return { path: args.path, namespace: NAMESPACE };
      });
      build.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => {
        const stub = bySpecifier.get(args.path);
        if (!stub) return { errors: [{ text: `operless-unreachable-modules: no stub for ${args.path}` }] };
        return { contents: stubSource(stub), loader: 'js' };
      });
    },
  };
}
