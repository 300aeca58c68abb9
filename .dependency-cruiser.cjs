/**
 * The layers of Operless, checked by dependency-cruiser (`npm run layers`; `npm test` runs it
 * after tsc and biome). A layer is a folder of src/; each rule below says which folders one
 * layer may import, and why. Imports point down only, so the picture is:
 *
 *   bench/  scripts/  functions/  bin/                      tools and entry points (anything below)
 *   src/index.ts  src/resources.ts                          the package entry; the repo's CRD list
 *   cli  ->  devloop, scaffold, project                     the `operless` command, `npm start`
 *   build   project   memcached   baseline                  packaging; examples (the operator, the bench's work queue)
 *   testing  ->  local                                      stand-ins: real API server / ElasticMQ; embedded SQS, Lambda runner, kubelet
 *   core   forwarder   crd                                  the reconcile runtime; watch -> SQS; the CRD schema DSL
 *   queue                                                   production SQS: sender, SendMessageBatch, scheduled resync
 *   kube                                                    the Kubernetes object model and REST client
 *   contract   retry   observability                        the message contract; the one backoff; structured logs
 *
 * Type-only imports count (tsPreCompilationDeps): a type is a dependency too. test/ is not
 * checked: tests may import anything. Nothing is ignored: there is no known-violations file,
 * and any violation fails.
 */

/** Folders that production code may build on: the runtime, the forwarder and what they stand on. */
const LIBRARY = ['observability', 'retry', 'contract', 'kube', 'queue', 'core', 'crd'];

/**
 * The rule "src/<layer>/ imports only src/<allowed>/ (and itself)". Packages (node_modules) and
 * Node built-ins are not restricted here; which a bundle may contain is src/build/'s concern.
 */
function layer(name, allowed, comment) {
  const own = [name, ...allowed].join('|');
  return {
    name: `layer-${name}`,
    comment: `src/${name}/ may import only ${allowed.length ? allowed.map((a) => `src/${a}/`).join(', ') : 'nothing else in src/'}: ${comment}`,
    severity: 'error',
    from: { path: `^src/${name}/` },
    to: { path: '^src/', pathNot: `^src/(${own})/` },
  };
}

/** A rule "nothing matching `from` imports anything matching `to`". */
function forbid(name, from, to, comment) {
  return { name, comment, severity: 'error', from: { path: from }, to: { path: to } };
}

/**
 * The forwarder's own layers: a pipeline of stage folders, each importing only the stages
 * before it — source (list/watch/store) <- route (predicates, owner mapping) <- coalesce
 * (per-key window, merge, backlog) <- sink (lanes: buffer, sender, resync feed) <- the
 * composition root (forwarder.ts, main.ts) — with control (leader election, probes,
 * readiness, leadership terms) beside the pipeline, and the shared leaves at the folder's top
 * (config.ts, label-selector.ts, metrics.ts, node-options.ts) that every stage may use.
 */
const FORWARDER_SHARED = ['config', 'label-selector', 'metrics', 'node-options'];
function stage(name, allowed, comment) {
  const folders = [name, ...allowed].join('|');
  return {
    name: `forwarder-${name}`,
    comment: `src/forwarder/${name}/ may import only ${[...allowed.map((a) => `${a}/`), ...FORWARDER_SHARED.map((f) => `${f}.ts`)].join(', ')} of the forwarder: ${comment}`,
    severity: 'error',
    from: { path: `^src/forwarder/${name}/` },
    to: { path: '^src/forwarder/', pathNot: `^src/forwarder/((${folders})/|(${FORWARDER_SHARED.join('|')})\\.ts$)` },
  };
}

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No cycles, between files or (through the layer rules) folders: a cycle makes two modules one, to be understood, tested and changed together.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },

    // The base: depend on nothing of Operless, so everything may depend on them.
    layer('observability', [], 'structured JSON logs (log.ts); a logger that imported the runtime could not be used by it.'),
    layer('retry', [], 'the one backoff formula, its jitter, the forwarder\'s tracker and an abortable pause: the runtime, the forwarder and the baseline share it.'),
    layer('contract', [], 'the reconcile message and DLQ metadata shared by every producer and consumer; it must not change when a producer does.'),

    // Kubernetes: the object model (types.ts) and the REST client every layer above talks through.
    layer('kube', ['contract', 'observability'], 'Kubernetes access knows nothing of reconciling or queues: the runtime, the forwarder, the CLI and the CRD DSL all use it.'),

    // Production SQS: what core (follow-ups), the forwarder (batched sends) and the resync function share.
    layer('queue', ['kube', 'contract', 'observability'], 'the production SQS code (sender, SendMessageBatch, resync lists through kube); the local stand-ins are src/local/, never imported from here.'),

    // The two programs Operless ships, side by side, neither importing the other.
    layer('core', ['queue', 'kube', 'contract', 'retry', 'observability'], 'the reconcile runtime runs in Lambda: only production code below it, no stand-in, no tool, not the forwarder.'),
    layer('forwarder', ['queue', 'kube', 'contract', 'retry', 'observability'], 'the in-cluster forwarder imports downward only (its packaging is src/build/); inside, its stage folders are layers of their own (forwarder-* below).'),
    // Inside the forwarder: the pipeline's stages import downward only; control sits beside them.
    stage('source', [], 'listing, watching and the snapshot store know nothing of what is done with a change.'),
    stage('route', ['source'], 'predicates and owner mapping turn a change into requests, pure; they do not know windows or queues.'),
    stage('coalesce', ['route', 'source'], 'the per-key window and the merge rules, fed by routed requests; no queue I/O.'),
    stage('sink', ['coalesce', 'route', 'source'], 'a lane per queue: its coalescer, buffer, sender, resync feed and timers.'),
    stage('webhook', [], 'the HTTPS webhook endpoint and its Lambda invoker: served by every replica, beside the pipeline and leader election, composed with them only in forwarder.ts.'),
    stage('control', [], 'leader election, probes, readiness and leadership terms: beside the pipeline, composed with it only in forwarder.ts.'),
    forbid('forwarder-shared-leaves', `^src/forwarder/(${FORWARDER_SHARED.join('|')})\\.ts$`, '^src/forwarder/([^/]+/|forwarder\\.ts$|main\\.ts$)',
      'the forwarder\'s shared leaves (config, label selector syntax, metrics, node flags) import no stage and not the composition root.'),
    forbid('forwarder-root-below-main', '^src/forwarder/forwarder\\.ts$', '^src/forwarder/main\\.ts$',
      'main.ts is the container entry point around startForwarder, never imported by it.'),
    layer('crd', ['kube', 'contract'], 'the schema DSL knows the object model and the contract\'s name validators only; which resources a project ships is the project\'s list (src/resources.ts), not the library\'s.'),

    // Stand-ins for AWS and the cluster, for development and tests: never reached from production code.
    layer('local', ['queue', 'kube', 'contract', 'observability'], 'the embedded SQS queue, the local Lambda runner and the simulated kubelet imitate AWS and the cluster; they must not depend on what they host (the runtime, the forwarder). The runner polls with the production SQS client settings (queue/sender.ts: bounded timeouts), as Lambda\'s event source is a client of SQS too.'),
    layer('testing', ['local', 'core', 'kube', 'contract', 'observability'], 'operless/testing starts real servers; it shares the queue spec of the embedded queue (QueueSpec), and runs one reconcile of a controller through the runtime (reconcileTester).'),

    // Examples built on the public library, as a user's operator would be.
    layer('memcached', ['core', 'kube', 'crd', 'contract', 'observability'], 'the reference operator uses only what an operator author can import (operless, operless/kube, operless/crd).'),
    layer('baseline', ['core', 'forwarder', 'queue', 'kube', 'contract', 'retry', 'observability'], 'the benchmarks\' controller-runtime-style work queue reuses the runtime and the forwarder\'s watches for a fair comparison. No src/ layer may import it, so the npm package leaves it out (tsconfig.build.json exclude).'),

    // Tools on top.
    layer('project', [], 'reads a project\'s serverless.yml; shared by the bundler (scripts/) and the dev loop.'),
    layer('build', ['testing'], 'packaging (esbuild plugins, the forwarder bundle, the Helm chart); the chart renders with the helm that testing/ provisions.'),
    layer('scaffold', ['crd', 'kube', 'core', 'contract'], 'operless init / create api generate a project from the library\'s own definitions.'),
    layer('devloop', [...LIBRARY, 'forwarder', 'local', 'testing', 'project'], 'npm start composes everything: a control plane, the embedded queue, the forwarder, functions behind the local runner.'),
    layer('preview', ['core', 'kube', 'contract', 'observability'], 'operless preview runs the project\'s controllers through the runtime\'s own reconcile with every write a server-side dry run; a tool, never imported by what runs in Lambda or the cluster.'),
    layer('cli', [...LIBRARY, 'devloop', 'scaffold', 'project', 'preview'], 'the operless command drives the dev loop and the scaffolder, talks to queues and clusters and reads the project\'s serverless.yml (doctor); it never imports an example.'),

    forbid('src-top-files-are-entry-points', '^src/[^/]+/', '^src/[^/]+\\.ts$',
      'src/index.ts (the package entry) and src/resources.ts (the repository\'s CRD list) sit above every folder: no layer imports them.'),
    forbid('src-is-self-contained', '^src/', '^(bench|scripts|functions|bin|test)/',
      'src/ is what the package ships: it never imports the tools, entry points or tests around it.'),
    forbid('functions-are-production', '^functions/', '^(src/(local|testing|devloop|build|cli|scaffold|baseline|project)/|bench/|scripts/|test/)',
      'functions/ are the Lambda entry points: production code and the operator only, never a stand-in or a tool.'),
    forbid('tools-do-not-import-tests', '^(bench|scripts|bin)/', '^test/',
      'bench/, scripts/ and bin/ run on their own; tests import them, not the other way round.'),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.json'] },
  },
};
