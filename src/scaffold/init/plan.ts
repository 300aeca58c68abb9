/**
 * `operless init`: the files of a new operator project that depends on Operless as a package.
 * Pure: `planInit` returns the files (`files.ts` writes them), each rendered by the
 * template of that file (init/templates/). The project starts with no kinds
 * (`operless create api` adds them at the `+operless:scaffold:*` markers) and its `npm test`
 * passes from the start (test/project.test.ts checks that every kind is wired everywhere).
 * It starts with one function, the scheduled resync (`functions/resync.ts`), which feeds
 * every kind's work queue once kinds exist, so `osls package` works from the start too
 * (serverless-esbuild fails on a service without functions).
 *
 * Toolchain pins (Node 24 via the `node` devDependency, TypeScript, osls, serverless-esbuild)
 */
import type { FileChange } from '../files.ts';
import { PROJECT_FILE, renderProjectFile } from '../project-file.ts';
import { packageJson, PROJECT_DEV_TOOLS, type InitOptions } from './templates/package-json.ts';
import { GITIGNORE, TSCONFIG } from './templates/config.ts';
import { RESOURCES } from './templates/resources.ts';
import { RESYNC_FUNCTION } from './templates/resync.ts';
import { EVENTS_README, FUNCTIONS_README, readme, SAMPLES_README } from './templates/readme.ts';
import { serverlessYaml } from './templates/serverless.ts';
import { forwarderValues } from './templates/forwarder-values.ts';
import { PROJECT_TEST } from './templates/project-test.ts';

export { PROJECT_DEV_TOOLS, type InitOptions } from './templates/package-json.ts';

export function planInit(options: InitOptions): FileChange[] {
  const create = (path: string, content: string): FileChange => ({ type: 'create', path, content });
  const files: FileChange[] = [
    create('package.json', packageJson(options)),
    create('tsconfig.json', TSCONFIG),
    create('.gitignore', GITIGNORE),
    create(
      PROJECT_FILE,
      renderProjectFile({
        name: options.name,
        domain: options.domain,
        apis: [],
        ...(options.scaffoldVersion ? { scaffoldVersion: options.scaffoldVersion } : {}),
        ...(options.namespaces?.length ? { namespaces: options.namespaces } : {}),
      }),
    ),
    create('serverless.yml', serverlessYaml(options.name, options.namespaces ?? [])),
    create('src/resources.ts', RESOURCES),
    create('functions/README.md', FUNCTIONS_README),
    create('functions/resync.ts', RESYNC_FUNCTION),
    create('events/README.md', EVENTS_README),
    create('infra/forwarder/values.yaml', forwarderValues(options.name)),
    create('infra/samples/README.md', SAMPLES_README),
    create('test/project.test.ts', PROJECT_TEST),
    create('README.md', readme(options)),
  ];
  if (options.operlessDependency.startsWith('file:')) {
    // Install a local Operless the way a published one is installed (a copy, not a symlink),
    // so the project uses its compiled dist/ exactly as it would from the registry.
    files.push(create('.npmrc', 'install-links=true\n'));
  }
  return files;
}
