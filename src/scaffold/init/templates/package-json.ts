/**
 * Template of a new project's `package.json`: its scripts, the `operless` dependency, and the
 * dev tools pinned at the versions this Operless is tested with. Pure.
 */

export interface InitOptions {
  readonly name: string;
  readonly domain: string;
  /** The `operless` dependency specifier, e.g. `^0.1.0` or `file:/path/to/operless`. */
  readonly operlessDependency: string;
  /** Pinned versions of the dev tools, by package name. */
  readonly toolVersions: Readonly<Record<string, string>>;
  /** Namespace-scoped mode: the namespaces the operator runs for (kube/scope.ts); empty/absent = cluster-wide. */
  readonly namespaces?: readonly string[];
  /** Recorded in operless.json: the Operless version whose scaffold wrote the project. */
  readonly scaffoldVersion?: string;
}

/** Dev tools a generated project pins (versions come from Operless's own package.json). */
export const PROJECT_DEV_TOOLS = ['@types/aws-lambda', '@types/node', 'esbuild', 'node', 'osls', 'serverless-esbuild', 'typescript'] as const;

export function packageJson(options: InitOptions): string {
  const devDependencies: Record<string, string> = {};
  for (const tool of PROJECT_DEV_TOOLS) {
    const version = options.toolVersions[tool];
    if (version) devDependencies[tool] = version;
  }
  const pkg = {
    name: options.name,
    version: '0.1.0',
    private: true,
    description: `Kubernetes operator ${options.name}, built with Operless: reconcile functions on AWS Lambda fed by SQS.`,
    type: 'module',
    engines: { node: '>=24.0.0' },
    scripts: {
      start: 'operless dev',
      test: 'tsc --noEmit && node --test "test/**/*.test.ts"',
      typecheck: 'tsc --noEmit',
      crd: 'operless crd',
      package: 'osls package --stage dev',
    },
    dependencies: { operless: options.operlessDependency },
    devDependencies,
    allowScripts: { node: true, esbuild: true },
  };
  return `${JSON.stringify(pkg, null, 2)}\n`;
}
