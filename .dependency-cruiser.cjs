/**
 * The layers of Operless, checked by dependency-cruiser (`npm run layers`; `npm test` runs it
 * after tsc and biome). A layer is a folder of src/; each rule below says which folders one
 * layer may import, and why. Imports point down only, so the picture is:
 *
 *   bench/  scripts/  bin/                                   tools (bench/baseline/: the benchmarks' work queue); anything below
 *   functions/  src/resources.ts  src/memcached/             the reference operator: the package's entries only (operator-uses-public-entries)
 *   src/index.ts  src/runtime.ts                             package entries (every entry: package.json exports)
 *   cli  ->  devloop, scaffold, project, preview             the `operless` command, `npm start`
 *   build   project                                          packaging (bundles, the forwarder's Node flags, the chart); serverless.yml
 *   testing  ->  local                                       stand-ins: real API server / ElasticMQ; embedded SQS, Lambda runner, kubelet
 *   core   forwarder   crd                                  the reconcile runtime (stage folders, core-* below); watch -> SQS; the CRD schema DSL
 *   queue                                                   production SQS: sender, SendMessageBatch, FIFO ids
 *   kube                                                    the Kubernetes object model and REST client
 *   contract   retry   observability                        the message contract; the one backoff; structured logs
 *
 * Type-only imports count (tsPreCompilationDeps): a type is a dependency too. test/ is not
 * checked: tests may import anything. Nothing is ignored: there is no known-violations file,
 * and any violation fails.
 */

/**
 * The package's public entries: the TypeScript source of every subpath of package.json's
 * `exports` (its `operless-source` condition) — `operless`, `operless/kube`, `operless/kinds`,
 * `operless/crd`, ... — read from package.json, so a new entry is allowed here when it is
 * exported there, and a file that is not an entry never is.
 */
const PUBLIC_ENTRIES = Object.values(require('./package.json').exports)
  .flatMap((entry) => (typeof entry === 'object' && typeof entry['operless-source'] === 'string' ? [entry['operless-source'].replace(/^\.\//, '')] : []));
const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

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
 * The forwarder's own layers, drawn from its imports: a star around the intake (intake.ts,
 * where routed changes become messages), which imports source (list/watch/store), route
 * (predicates, owner mapping, the related index; reads source's types) and sink (a lane per
 * queue: buffer, sender, resync feed) -> coalesce (the per-key window and merge rules, which
 * know messages only); composed in forwarder.ts and main.ts — with control (leader election, probes, readiness, leadership
 * terms) and webhook beside it. Every stage may use the shared rooms: config/ (the
 * configuration: schema, compiled validator, cross-field checks, label selector syntax) and
 * metrics.ts.
 */
const FORWARDER_SHARED_FOLDERS = ['config'];
const FORWARDER_SHARED_FILES = ['metrics'];
function stage(name, allowed, comment) {
  const folders = [...new Set([name, ...allowed, ...FORWARDER_SHARED_FOLDERS])].join('|');
  const shared = [...FORWARDER_SHARED_FOLDERS.filter((f) => f !== name).map((f) => `${f}/`), ...FORWARDER_SHARED_FILES.map((f) => `${f}.ts`)];
  return {
    name: `forwarder-${name}`,
    comment: `src/forwarder/${name}/ may import only ${[...allowed.map((a) => `${a}/`), ...shared].join(', ')} of the forwarder: ${comment}`,
    severity: 'error',
    from: { path: `^src/forwarder/${name}/` },
    to: { path: '^src/forwarder/', pathNot: `^src/forwarder/((${folders})/|(${FORWARDER_SHARED_FILES.join('|')})\\.ts$)` },
  };
}

/**
 * The reconcile runtime's own layers (src/core/), one concept per folder, importing downward only:
 *
 *   handler/                  the SQS handler: a batch grouped by key, each key run, one batch response
 *   controls/   per-key/      the controls at run time (rate limit, timers); per-key ordering (requeue merge, delay mover)
 *   reconcile/                one key: reconcile, pause, the follow-up decision, its delivery, outcome, metrics, spans
 *   invocation/               one Lambda invocation's limits: time budget, answer deadline, bounded concurrency, delay schedule
 *   controller/   webhook/    the author's API (spec, context, result, errors, retry policy, controls' declarations); webhooks
 *   resync/                   the scheduled resync (a Lambda of its own that feeds the handler's queues) and the resync period
 *
 * Each rule says which other folders of src/core/ one folder may import.
 */
function coreStage(name, allowed, comment) {
  const own = [name, ...allowed].join('|');
  return {
    name: `core-${name}`,
    comment: `src/core/${name}/ may import only ${allowed.length ? allowed.map((a) => `${a}/`).join(', ') : 'nothing else'} of src/core/: ${comment}`,
    severity: 'error',
    from: { path: `^src/core/${name}/` },
    to: { path: '^src/core/', pathNot: `^src/core/(${own})/` },
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
    layer('queue', ['kube', 'contract', 'observability'], 'the production SQS code (sender, SendMessageBatch, FIFO ids); the local stand-ins are src/local/, never imported from here.'),

    // The two programs Operless ships, side by side, neither importing the other.
    layer('core', ['queue', 'kube', 'contract', 'retry', 'observability'], 'the reconcile runtime runs in Lambda: only production code below it, no stand-in, no tool, not the forwarder.'),
    // Inside the runtime: one concept per folder, downward only (the picture above coreStage).
    coreStage('resync', [], 'the scheduled resync lists each kind and sends one Resync per object to the queues the handler reads; it knows no reconcile.'),
    coreStage('controller', ['resync'], 'what an author writes (ControllerSpec, the context, the result, errors, retry policy, rate limit and timer declarations) is data: it knows no handler (it reads the resync period it declares).'),
    coreStage('webhook', [], 'admission and conversion webhooks are a handler of their own: they share nothing with the reconcile path.'),
    coreStage('invocation', ['controller'], 'an invocation\'s time budget, answer deadline, bounded concurrency and delay schedule are arithmetic on the clock and SQS\'s limits.'),
    coreStage('reconcile', ['controller', 'invocation'], 'one key\'s reconcile, its follow-up decision, delivery and outcome know nothing of how a batch is split or which controls gate it.'),
    coreStage('controls', ['controller', 'invocation', 'reconcile'], 'the rate limit and the timers wrap one key\'s reconcile; they are called by the handler, never the reverse.'),
    coreStage('per-key', ['controller', 'invocation', 'reconcile'], 'per-key ordering (the requeue merge, the delay queue\'s mover) is one strategy beside the controls, chosen by the handler.'),
    coreStage('handler', ['controller', 'invocation', 'reconcile', 'controls', 'per-key'], 'the SQS handler composes the stages below it; nothing below imports it.'),
    forbid('core-files-in-stages', '^src/', '^src/core/[^/]+\\.ts$', 'every module of src/core/ sits in one stage folder: a file at the top of core/ would belong to no concept.'),
    layer('forwarder', ['queue', 'kube', 'contract', 'retry', 'observability'], 'the in-cluster forwarder imports downward only (its packaging is src/build/); inside, its stage folders are layers of their own (forwarder-* below).'),
    // Inside the forwarder: the stages import downward only; control and webhook sit beside them.
    stage('config', [], 'the configuration (its one schema, the compiled validator, the cross-field checks, label selector syntax) is read by every stage and knows none of them.'),
    stage('source', [], 'listing, watching and the snapshot store know nothing of what is done with a change.'),
    stage('route', ['source'], 'predicates and owner mapping turn a change into requests, pure; they do not know windows or queues.'),
    stage('coalesce', [], 'the per-key window and the merge rules work on reconcile messages alone: no change, no route, no queue I/O.'),
    stage('sink', ['coalesce', 'source'], 'a lane per queue holds its coalescer, buffer, sender, resync feed and timers; it sends messages and reads snapshots, it does not route.'),
    {
      name: 'forwarder-intake',
      comment: 'src/forwarder/intake.ts is the junction: it may import source/, route/, sink/ and the shared config/ and metrics.ts of the forwarder (not control/, webhook/, coalesce/ or the composition root).',
      severity: 'error',
      from: { path: '^src/forwarder/intake\\.ts$' },
      to: { path: '^src/forwarder/', pathNot: '^src/forwarder/((source|route|sink|config)/|(intake|metrics)\\.ts$)' },
    },
    stage('webhook', [], 'the HTTPS webhook endpoint and its Lambda invoker: served by every replica, beside the pipeline and leader election, composed with them only in forwarder.ts.'),
    stage('control', [], 'leader election, probes, readiness and leadership terms: beside the pipeline, composed with it only in forwarder.ts.'),
    forbid('forwarder-shared-leaves', `^src/forwarder/(${FORWARDER_SHARED_FILES.join('|')})\\.ts$`, '^src/forwarder/([^/]+/|forwarder\\.ts$|main\\.ts$|intake\\.ts$)',
      'the forwarder\'s shared metrics import no stage, not the intake and not the composition root.'),
    forbid('forwarder-root-below-main', '^src/forwarder/forwarder\\.ts$', '^src/forwarder/main\\.ts$',
      'main.ts is the container entry point around startForwarder, never imported by it.'),
    layer('crd', ['kube', 'contract'], 'the schema DSL knows the object model and the contract\'s name validators only; which resources a project ships is the project\'s list (src/resources.ts), not the library\'s.'),

    // Stand-ins for AWS and the cluster, for development and tests: never reached from production code.
    layer('local', ['queue', 'kube', 'contract', 'observability'], 'the embedded SQS queue, the local Lambda runner and the simulated kubelet imitate AWS and the cluster; they must not depend on what they host (the runtime, the forwarder). The runner polls with the production SQS client settings (queue/sender.ts: bounded timeouts), as Lambda\'s event source is a client of SQS too.'),
    layer('testing', ['local', 'core', 'kube', 'contract', 'observability'], 'operless/testing starts real servers; it shares the queue spec of the embedded queue (QueueSpec), and runs one reconcile of a controller through the runtime (reconcileTester).'),

    // The reference operator, built on the public library as a user's operator would be.
    {
      name: 'operator-uses-public-entries',
      comment: `the reference operator (src/memcached/), its Lambda entry points (functions/) and its CRD list (src/resources.ts) import only the package's public entries (${PUBLIC_ENTRIES.join(', ')}) and src/memcached/ itself: what an operator author can import, so every name it needs is on the public surface.`,
      severity: 'error',
      from: { path: '^(src/memcached/|functions/|src/resources\\.ts$)' },
      to: { path: '^src/', pathNot: `^(src/memcached/|(${PUBLIC_ENTRIES.map(escapeRegExp).join('|')})$)` },
    },

    // Tools on top.
    layer('project', [], 'reads a project\'s serverless.yml; shared by the bundler (scripts/) and the dev loop.'),
    layer('build', ['testing'], 'packaging (esbuild plugins, the forwarder bundle, the Helm chart); the chart renders with the helm that testing/ provisions.'),
    layer('scaffold', ['crd', 'kube', 'core', 'contract'], 'operless init / create api generate a project from the library\'s own definitions.'),
    layer('devloop', [...LIBRARY, 'forwarder', 'local', 'testing', 'project'], 'npm start composes everything: a control plane, the embedded queue, the forwarder, functions behind the local runner.'),
    layer('preview', ['core', 'kube', 'contract', 'observability'], 'operless preview runs the project\'s controllers through the runtime\'s own reconcile with every write a server-side dry run; a tool, never imported by what runs in Lambda or the cluster.'),
    layer('cli', [...LIBRARY, 'devloop', 'scaffold', 'project', 'preview'], 'the operless command drives the dev loop and the scaffolder, talks to queues and clusters and reads the project\'s serverless.yml (doctor); it never imports an example.'),

    {
      name: 'src-top-files-are-entry-points',
      comment: 'src/index.ts and src/runtime.ts (package entries) and src/resources.ts (the repository\'s CRD list) sit above every library folder: no layer imports them, only the reference operator (src/memcached/) imports the entries, as a user would.',
      severity: 'error',
      from: { path: '^src/[^/]+/', pathNot: '^src/memcached/' },
      to: { path: '^src/[^/]+\\.ts$' },
    },
    forbid('src-is-self-contained', '^src/', '^(bench|scripts|functions|bin|test)/',
      'src/ is what the package ships: it never imports the tools, entry points or tests around it.'),
    forbid('functions-are-production', '^functions/', '^(src/(local|testing|devloop|build|cli|scaffold|project)/|bench/|scripts/|test/)',
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
