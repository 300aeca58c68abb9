/**
 * The stubs of src/build/unreachable-modules.ts: which modules they replace (and only
 * those, only under client-node's config.js), that the stubs fail loudly and clearly, that
 * the installed client-node reaches the stubbed modules only from code Operless never
 * calls, and that a kubeconfig still works in a bundle built the shipped way.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { loadEsbuildPlugins } from '../../../src/build/esbuild-plugins.ts';
import { stubErrorMessage, stubSource, stubUnreachableModules, UNREACHABLE_MODULES } from '../../../src/build/unreachable-modules.ts';
import { esbuildOptions, readServerlessConfig, ROOT } from '../../../scripts/bundle.ts';

/** client-node's config.js without comment lines (they mention the functions too). */
const configSource = readFileSync(join(ROOT, 'node_modules/@kubernetes/client-node/dist/config.js'), 'utf8')
  .split('\n')
  .filter((l) => !/^\s*(\/\/|\/\*|\*)/.test(l))
  .join('\n');

async function importSource(source: string): Promise<Record<string, unknown>> {
  return (await import(`data:text/javascript;base64,${Buffer.from(source).toString('base64')}`)) as Record<string, unknown>;
}

/** Bundles `source` (resolved from the repository root) in memory; returns the metafile's input paths. */
async function bundleInputs(source: string): Promise<string[]> {
  const out = await build({
    stdin: { contents: source, resolveDir: ROOT, loader: 'js' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    write: false,
    metafile: true,
    logLevel: 'silent',
    plugins: [stubUnreachableModules()],
  });
  return Object.keys(out.metafile.inputs);
}

test('the stubs replace exactly undici, socks, socks-proxy-agent, hpagent, the generated clients and the removed auth-providers of config.js', async () => {
  const inputs = await bundleInputs("export { KubeConfig } from '@kubernetes/client-node/dist/config.js';");
  const stubbed = inputs
    .filter((p) => p.startsWith('operless-unreachable:'))
    .map((p) => p.slice('operless-unreachable:'.length))
    .sort();
  assert.deepEqual(stubbed, ['./azure_auth.js', './gcp_auth.js', './gen/index.js', 'hpagent', 'socks', 'socks-proxy-agent', 'undici']);
  const leaked = inputs.filter((p) =>
    /node_modules\/(undici|socks|socks-proxy-agent|hpagent|agent-base|smart-buffer|ip-address|jsonpath-plus)\/|client-node\/dist\/gen\/(models|apis)\/|client-node\/dist\/(azure|gcp)_auth\.js/.test(
      p,
    ),
  );
  assert.deepEqual(leaked, []);
  // What the kubeconfig path needs is still there.
  for (const kept of ['node_modules/js-yaml/', 'client-node/dist/exec_auth.js', 'client-node/dist/oidc_auth.js', 'client-node/dist/config_types.js']) {
    assert.ok(
      inputs.some((p) => p.includes(kept)),
      `${kept} must stay in the bundle`,
    );
  }
});

test('another importer of a stubbed package gets the real one', async () => {
  const inputs = await bundleInputs("export { Agent } from 'undici'; export { KubeConfig } from '@kubernetes/client-node/dist/config.js';");
  assert.ok(
    inputs.some((p) => p.includes('node_modules/undici/')),
    'a direct import of undici must bundle undici',
  );
  assert.ok(inputs.includes('operless-unreachable:undici'), 'config.js still gets the stub');
});

test('importing a stub does nothing; using any export throws an Error naming the module and why', async () => {
  for (const stub of UNREACHABLE_MODULES) {
    const mod = await importSource(stubSource(stub));
    assert.deepEqual(Object.keys(mod).sort(), Object.keys(stub.exports).sort(), stub.specifier);
    for (const [name, kind] of Object.entries(stub.exports)) {
      if (kind === 'authenticator') {
        // Constructed by every KubeConfig: claims only its own provider, and refuses to authenticate with it.
        const Authenticator = mod[name] as new () => {
          isAuthProvider(user: unknown): boolean;
          applyAuthentication(user: unknown, opts: unknown): Promise<void>;
        };
        const authenticator = new Authenticator();
        assert.equal(authenticator.isAuthProvider({ authProvider: { name: stub.authProvider } }), true, name);
        assert.equal(authenticator.isAuthProvider({ authProvider: { name: 'oidc' } }), false, name);
        assert.equal(authenticator.isAuthProvider({ token: 'x' }), false, name);
        await assert.rejects(authenticator.applyAuthentication({}, {}), { message: stubErrorMessage(stub) });
        continue;
      }
      const value = mod[name] as (new () => unknown) & (() => unknown) & Record<string, () => unknown>;
      const use = kind === 'class' ? () => new value() : kind === 'function' ? () => value() : () => value[stub.staticMethods![0]!]!();
      assert.throws(
        use,
        (err: unknown) => {
          assert.ok(err instanceof Error);
          assert.equal(err.message, stubErrorMessage(stub));
          return true;
        },
        `${stub.specifier} ${name}`,
      );
    }
    const message = stubErrorMessage(stub);
    assert.match(message, new RegExp(`^${stub.specifier.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(`));
    assert.match(message, /is not bundled by Operless/);
    assert.match(message, stub.authProvider ? /removed this kubeconfig auth-provider .* in 1\.26; use its exec plugin/ : /node:https/);
    assert.match(message, /operless-unreachable-modules/);
  }
});

/** Source text of a method (4-space indented, as tsc emits class members) or a top-level function of config.js. */
function bodyOf(name: string): string {
  const lines = configSource.split('\n');
  const start = lines.findIndex((l) => new RegExp(`^(    (async )?|function )${name}\\(`).test(l));
  assert.ok(start >= 0, `config.js has no ${name}(): the client-node version changed; re-check the stubs`);
  const closing = lines[start]!.startsWith('function ') ? '}' : '    }';
  const end = lines.findIndex((l, i) => i > start && l === closing);
  return lines.slice(start, end + 1).join('\n');
}

/** Every use of `identifier` (not its import or its own definition) lies in the bodies given. */
function usedOnlyIn(identifier: string, bodies: readonly string[]): void {
  const pattern = new RegExp(`\\b${identifier}\\b`, 'g');
  const definition = new RegExp(`^(import |function ${identifier}\\(|    (async )?${identifier}\\()`);
  const uses =
    configSource
      .split('\n')
      .filter((l) => !definition.test(l))
      .join('\n')
      .match(pattern)?.length ?? 0;
  const inBodies = bodies.reduce((n, b) => n + (b.match(pattern)?.length ?? 0), 0);
  assert.ok(uses > 0, `${identifier} is no longer used by config.js`);
  assert.equal(inBodies, uses, `${identifier} is used outside ${bodies.length} allowed function(s) in config.js: re-check the stubs`);
}

test('the installed client-node reaches the stubbed modules only from makeApiClient, the dispatcher and the proxy-url branch', () => {
  // The import lines bind what the stubs export, under these names.
  assert.match(configSource, /import \{ Agent as UndiciAgent, ProxyAgent as UndiciProxyAgent, \} from 'undici';/);
  assert.match(configSource, /import \{ createConfiguration, ServerConfiguration, \} from '\.\/gen\/index\.js';/);
  assert.match(configSource, /import \{ SocksProxyAgent \} from 'socks-proxy-agent';/);
  assert.match(configSource, /import \{ SocksClient \} from 'socks';/);
  assert.match(configSource, /import \{ HttpProxyAgent, HttpsProxyAgent \} from 'hpagent';/);
  assert.match(configSource, /import \{ AzureAuth \} from '\.\/azure_auth\.js';/);
  assert.match(configSource, /import \{ GoogleCloudPlatformAuth \} from '\.\/gcp_auth\.js';/);
  // The removed auth-providers are only constructed into the authenticator list (asked isAuthProvider).
  usedOnlyIn('AzureAuth', [bodyOf('constructor')]);
  usedOnlyIn('GoogleCloudPlatformAuth', [bodyOf('constructor')]);
  usedOnlyIn('UndiciAgent', [bodyOf('createDispatcher')]);
  usedOnlyIn('UndiciProxyAgent', [bodyOf('createDispatcher')]);
  usedOnlyIn('SocksClient', [bodyOf('createSocksConnector')]);
  usedOnlyIn('createConfiguration', [bodyOf('makeApiClient')]);
  usedOnlyIn('ServerConfiguration', [bodyOf('makeApiClient')]);
  usedOnlyIn('createSocksConnector', [bodyOf('createDispatcher')]);
  usedOnlyIn('createDispatcher', [bodyOf('applySecurityAuthentication')]);
  // The proxy agents are built only in createAgent's `cluster.proxyUrl` branch.
  const createAgent = bodyOf('createAgent');
  const proxyBranch = createAgent.slice(createAgent.indexOf('if (cluster && cluster.proxyUrl) {'), createAgent.indexOf('\n        else if ('));
  assert.ok(proxyBranch.length > 0);
  for (const agent of ['SocksProxyAgent', 'HttpsProxyAgent', 'HttpProxyAgent']) usedOnlyIn(agent, [proxyBranch]);
});

test('Operless never calls the client-node entry points that lead to the stubs', () => {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith('.ts') && !path.endsWith('.test.ts')) files.push(path);
    }
  };
  for (const dir of ['src', 'functions']) walk(join(ROOT, dir));
  const offenders = files.filter((f) => /\b(makeApiClient|applySecurityAuthentication|createDispatcher)\s*\(/.test(readFileSync(f, 'utf8')));
  assert.deepEqual(offenders, []);
  // And kubeConfigAuth refuses proxy-url before applyToHTTPSOptions could build a proxy agent.
  const kubeconfig = readFileSync(join(ROOT, 'src/kube/kubeconfig.ts'), 'utf8');
  assert.ok(
    kubeconfig.indexOf('if (cluster.proxyUrl) {') > 0 && kubeconfig.indexOf('if (cluster.proxyUrl) {') < kubeconfig.indexOf('applyToHTTPSOptions(opts)'),
  );
});

test('serverless.yml wires the plugins, and a kubeconfig works in a bundle built the shipped way', async () => {
  const { esbuild } = readServerlessConfig();
  assert.equal(esbuild.plugins, 'src/build/esbuild-plugins.ts');
  const plugins = loadEsbuildPlugins(esbuild.plugins, ROOT);
  assert.deepEqual(
    plugins.map((p) => p.name),
    ['operless-unreachable-modules', 'operless-builtins-without-esm-facade', 'operless-chunks-per-entry'],
  );

  mkdirSync(join(ROOT, '.build'), { recursive: true });
  // Inside the repository: the bundle resolves nothing at run time, but @aws-sdk stays external like on Lambda.
  const dir = mkdtempSync(join(ROOT, '.build', 'unreachable-test-'));
  try {
    const entry = join(dir, 'entry.ts');
    writeFileSync(
      entry,
      [
        `import { kubeConfigAuth, loadKubeConfig } from ${JSON.stringify(join(ROOT, 'src/kube/kubeconfig.ts'))};`,
        'export async function headers(yaml: string) { const kc = await loadKubeConfig(); kc.loadFromString(yaml); return (await kubeConfigAuth(kc).credentials()).headers; }',
        'export async function apiClient(yaml: string) { const kc = await loadKubeConfig(); kc.loadFromString(yaml); return kc.makeApiClient(class {} as never); }',
      ].join('\n'),
    );
    const outfile = join(dir, 'entry.mjs');
    const result = await build(esbuildOptions(esbuild, entry, outfile));
    assert.ok(Object.keys(result.metafile.inputs).includes('operless-unreachable:undici'));
    const bundle = (await import(pathToFileURL(outfile).href)) as {
      headers(yaml: string): Promise<Record<string, string>>;
      apiClient(yaml: string): Promise<unknown>;
    };
    const kubeconfig = [
      'apiVersion: v1',
      'kind: Config',
      'current-context: c',
      'clusters: [{ name: k, cluster: { server: "https://127.0.0.1:6443" } }]',
      'users: [{ name: u, user: { token: abc } }]',
      'contexts: [{ name: c, context: { cluster: k, user: u } }]',
    ].join('\n');
    assert.equal((await bundle.headers(kubeconfig)).Authorization, 'Bearer abc');
    const gcp = kubeconfig.replace('user: { token: abc }', 'user: { auth-provider: { name: gcp, config: { access-token: t } } }');
    await assert.rejects(bundle.headers(gcp), /\.\/gcp_auth\.js \(the gcp kubeconfig auth-provider\) is not bundled by Operless: Kubernetes removed/);
    await assert.rejects(
      bundle.apiClient(kubeconfig),
      /\.\/gen\/index\.js \(the generated API clients and models \(KubeConfig\.makeApiClient\)\) is not bundled by Operless/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('loadEsbuildPlugins: no setting, no plugins; a wrong path is an error naming the file', () => {
  assert.deepEqual(loadEsbuildPlugins(undefined, ROOT), []);
  assert.throws(() => loadEsbuildPlugins('src/build/nope.ts', ROOT), /custom\.esbuild\.plugins: cannot load .*src\/build\/nope\.ts/);
});
