/**
 * Templates of a new project's READMEs: the project's own, and those of functions/, events/ and
 * infra/samples/. Pure.
 */
import type { InitOptions } from './package-json.ts';

export const SAMPLES_README = '# Sample resources: `kubectl apply -f infra/samples/`. `npm start` applies them to the local cluster.\n';

export const FUNCTIONS_README = `# Lambda entry points

One module per kind, added by \`operless create api\`: it exports \`handler\` (what Lambda calls,
fed by the kind's SQS queue) and \`controllers\` (what the handler serves; \`operless dev\` derives
the forwarder's watches from them). Each is declared in serverless.yml with its own queue and DLQ.

\`resync.ts\` is the scheduled safety net (\`resyncSchedule\` in serverless.yml, every 10 minutes
by default): it lists every object of every kind and sends each a \`Resync\` message on its
kind's queue, so anything the forwarder ever missed is reconciled. \`operless create api\` adds
each kind to it.
`;

export const EVENTS_README = `# Sample Lambda SQS events

\`<kind>-added.json\`: an SQS event with one reconcile message, as the forwarder sends it. The
tests invoke the handler with it; \`npx osls invoke local --stage local -f <function> -p events/<kind>-added.json\`
does the same against the cluster in OPERLESS_KUBECONFIG.
`;

export function readme(options: InitOptions): string {
  return `# ${options.name}

A Kubernetes operator built with Operless (its documentation: \`node_modules/operless/README.md\`
after \`npm install\`): an in-cluster forwarder turns watch events into SQS messages, and
stateless Lambda functions reconcile.

\`\`\`sh
npm install && npm test   # type-check, then the tests against a real local kube-apiserver
npm start                 # the whole loop locally: control plane, queue, forwarder, functions
\`\`\`

The first run builds the Kubernetes test binaries into ~/.cache/operless (or reuses them;
\`KUBEBUILDER_ASSETS\` is honoured).

## Add a kind

\`\`\`sh
npx operless create api --group cache --version v1alpha1 --kind Memcached --owns Deployment,Service
\`\`\`

creates \`src/<kind>/types.ts\` (schema: spec and status), \`src/<kind>/controller.ts\` (reconcile),
\`functions/<kind>.ts\`, its queue, DLQ and function in serverless.yml, the forwarder watches,
RBAC, a sample, a sample SQS event and an integration test, and adds the kind to the scheduled
resync function (\`functions/resync.ts\`). After editing a schema, \`npm run crd\` regenerates
\`infra/crds/\`.

## Layout

| path | what |
| --- | --- |
| \`src/<kind>/\` | the kind's schema (Operless CRD DSL) and controller |
| \`src/resources.ts\` | the resources \`operless crd\` renders |
| \`functions/\` | Lambda entry points (\`handler\`, \`controllers\`), and \`resync.ts\` (the scheduled resync of every kind) |
| \`serverless.yml\` | queues, DLQs, functions (osls + serverless-esbuild), the resync schedule |
| \`infra/crds/\` | generated CRDs |
| \`infra/rbac/\` | RBAC of the functions and of the forwarder |
| \`infra/forwarder/\` | Helm values and watches of the forwarder |
| \`infra/samples/\` | sample resources |
| \`events/\` | sample SQS events |
| \`test/\` | tests (\`node --test\`) |
| \`.scaffold/\` | what the Operless scaffold generated, before your edits: the base \`operless upgrade\` merges against (commit it, do not edit it) |

## Deploy

\`npm run package\` builds the functions offline; \`npx osls deploy\` deploys them. Apply
\`infra/crds/\` and \`infra/rbac/\`, map the functions' IAM role to the Kubernetes groups the
RBAC binds (an EKS access entry), and install the forwarder with the values in \`infra/forwarder/\`.

## Depending on Operless

\`package.json\` depends on \`operless\` (\`${options.operlessDependency}\`). Upgrade with
\`npx operless@<version> upgrade\`: it sets the dependency and merges that version's templates
into the files generated here, keeping your edits (conflicts are marked and listed); then
\`npm install && npm run crd && npm test\`.
`;
}
