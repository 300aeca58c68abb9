/**
 * The rules of the forwarder's configuration that its JSON Schema (schema.ts) cannot
 * state, run after the schema on the same (defaulted) document: orderings between two fields,
 * the label selector grammar, a cluster-scoped kind with namespaces, a watch's namespaces
 * outside the operator's `namespaces`, a kind listed twice, a
 * related watch's mapping and the primary it names, a related watch of Secrets without a
 * scope, at
 * least one queue, the region a queue URL names, and the listen address.
 *
 * Each check is a small named function that adds at most one problem, at the path of the
 * field to change. A check reads a field only when the schema found nothing wrong with it, so
 * one bad value gives one problem, and the checks run even when the schema failed elsewhere
 * (every problem is reported at once). Pure: no I/O.
 */
import { relatedMappingProblem } from '../../contract/related.ts';
import { labelSelectorProblem } from './label-selector.ts';
import type { Problems } from './problems.ts';
import { FORWARDER_CONFIG_SCHEMA } from './schema.ts';

type Raw = Record<string, unknown>;

/** The value as a mapping, if it is one. */
export function mapping(value: unknown): Raw | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Raw) : undefined;
}

/** The field at a dotted path (`send.backoffMaxMs`), if the schema found no problem with it. */
function field(document: Raw, problems: Problems, path: string): unknown {
  if (problems.has(path)) return undefined;
  let value: unknown = document;
  for (const key of path.split('.')) value = mapping(value)?.[key];
  return value;
}

const numberField = (document: Raw, problems: Problems, path: string): number | undefined => {
  const value = field(document, problems, path);
  return typeof value === 'number' ? value : undefined;
};
const stringField = (document: Raw, problems: Problems, path: string): string | undefined => {
  const value = field(document, problems, path);
  return typeof value === 'string' ? value : undefined;
};

/** A rule between two numeric fields; a break is reported at `field`. */
interface OrderRule {
  readonly field: string;
  readonly other: string;
  readonly holds: (value: number, other: number) => boolean;
  readonly message: (value: number, other: number) => string;
}

const ORDER_RULES: readonly OrderRule[] = [
  {
    field: 'send.connectTimeoutMs',
    other: 'send.requestTimeoutMs',
    holds: (c, r) => c <= r,
    message: (c, r) => `must be at most send.requestTimeoutMs (${r}): the request timeout already covers the connection, got ${c}`,
  },
  {
    field: 'send.backoffMaxMs',
    other: 'send.backoffInitialMs',
    holds: (max, initial) => max >= initial,
    message: (_, initial) => `must be at least send.backoffInitialMs (${initial})`,
  },
  {
    field: 'watch.backoffMaxMs',
    other: 'watch.backoffInitialMs',
    holds: (max, initial) => max >= initial,
    message: (_, initial) => `must be at least watch.backoffInitialMs (${initial})`,
  },
  {
    field: 'coalesceMaxWindowMs',
    other: 'coalesceWindowMs',
    holds: (max, window) => max >= window,
    message: (_, window) => `must be at least coalesceWindowMs (${window}); equal turns the widening under a backlog off`,
  },
  {
    field: 'leaderElection.renewDeadlineSeconds',
    other: 'leaderElection.leaseDurationSeconds',
    holds: (renew, lease) => renew < lease,
    message: (renew, lease) => `must be less than leaseDurationSeconds (${lease}), got ${renew}`,
  },
  {
    field: 'leaderElection.retryPeriodSeconds',
    other: 'leaderElection.renewDeadlineSeconds',
    holds: (retry, renew) => retry < renew,
    message: (retry, renew) => `must be less than renewDeadlineSeconds (${renew}), got ${retry}`,
  },
];

function checkOrderings(document: Raw, problems: Problems): void {
  for (const rule of ORDER_RULES) {
    const value = numberField(document, problems, rule.field);
    const other = numberField(document, problems, rule.other);
    if (value !== undefined && other !== undefined && !rule.holds(value, other)) problems.add(rule.field, rule.message(value, other));
  }
}

/** The watches of one list with their paths (`primaries[0]`), those that are mappings. */
function watchesOf(document: Raw, list: 'primaries' | 'owned' | 'related'): [string, Raw][] {
  const watches = document[list];
  return Array.isArray(watches) ? watches.flatMap((w, i) => (mapping(w) ? [[`${list}[${i}]`, w as Raw] as [string, Raw]] : [])) : [];
}

const allWatches = (document: Raw): [string, Raw][] => [
  ...watchesOf(document, 'primaries'),
  ...watchesOf(document, 'owned'),
  ...watchesOf(document, 'related'),
];

function checkLabelSelectors(document: Raw, problems: Problems): void {
  for (const [path, watch] of allWatches(document)) {
    const selector = problems.has(`${path}.labelSelector`) ? undefined : watch.labelSelector;
    const problem = typeof selector === 'string' ? labelSelectorProblem(selector) : undefined;
    if (problem) problems.add(`${path}.labelSelector`, `is not a valid label selector: ${problem}`);
  }
}

function checkClusterScopedNamespaces(document: Raw, problems: Problems): void {
  for (const [path, watch] of allWatches(document)) {
    if (watch.namespaced === false && Array.isArray(watch.namespaces) && watch.namespaces.length > 0)
      problems.add(`${path}.namespaces`, 'must be empty for a cluster-scoped kind (namespaced: false)');
  }
}

/**
 * With the operator's `namespaces` set (namespace-scoped mode), a watch's own namespaces must
 * be among them: its RBAC is granted in those namespaces only (docs/security.md).
 */
function checkWatchNamespacesInScope(document: Raw, problems: Problems): void {
  const scope = problems.has('namespaces') || !Array.isArray(document.namespaces) ? [] : document.namespaces.filter((n): n is string => typeof n === 'string');
  if (scope.length === 0) return;
  for (const [path, watch] of allWatches(document)) {
    if (!Array.isArray(watch.namespaces)) continue;
    watch.namespaces.forEach((namespace, i) => {
      const at = `${path}.namespaces[${i}]`;
      if (typeof namespace === 'string' && !problems.has(at) && !scope.includes(namespace)) {
        problems.add(at, `must be one of the top-level namespaces (${scope.join(', ')}): the operator runs for those only, got ${JSON.stringify(namespace)}`);
      }
    });
  }
}

function checkKindsListedOnce(document: Raw, problems: Problems): void {
  const seen = new Map<string, string>();
  for (const [path, watch] of allWatches(document)) {
    if (problems.has(`${path}.apiVersion`) || problems.has(`${path}.kind`)) continue;
    const id = `${watch.kind} (${watch.apiVersion})`;
    const first = seen.get(id);
    if (first) problems.add(path, `${id} is listed twice (also ${first}); list each kind once`);
    else seen.set(id, path);
  }
}

/**
 * A related watch: a namespaced kind (its mapping never leaves the object's namespace), each
 * `for` entry a configured namespaced primary with exactly one of field, label, namespace
 * (`relatedMappingProblem`, the rule `defineController` applies too).
 */
function checkRelatedWatches(document: Raw, problems: Problems): void {
  const primaries = watchesOf(document, 'primaries').map(([, w]) => w);
  for (const [path, watch] of watchesOf(document, 'related')) {
    if (watch.namespaced === false) problems.add(`${path}.namespaced`, 'must be true: a related object maps to primaries in its own namespace');
    const targets = Array.isArray(watch.for) ? watch.for : [];
    targets.forEach((t, i) => {
      const target = mapping(t);
      const at = `${path}.for[${i}]`;
      if (!target || problems.has(at) || problems.has(`${at}.apiVersion`) || problems.has(`${at}.kind`)) return;
      const primary = primaries.find((p) => p.kind === target.kind && p.apiVersion === target.apiVersion);
      if (!primary) problems.add(`${at}.kind`, `must name a kind listed under primaries, got ${String(target.kind)} (${String(target.apiVersion)})`);
      else if (primary.namespaced === false)
        problems.add(`${at}.kind`, `${String(target.kind)} is cluster-scoped; a related object maps to namespaced primaries only`);
      const ways = (['field', 'label', 'namespace'] as const).filter((k) => target[k] !== undefined);
      const problem =
        ways.length !== 1
          ? `must set exactly one of field, label, namespace, got ${ways.length === 0 ? 'none' : ways.join(' and ')}`
          : relatedMappingProblem({ [ways[0] as string]: target[ways[0] as string] });
      if (problem && !ways.some((k) => problems.has(`${at}.${k}`))) problems.add(at, problem);
    });
  }
}

/** Every primary's queue URL, in order (the valid ones). */
function primaryQueueUrls(document: Raw, problems: Problems): string[] {
  return watchesOf(document, 'primaries').flatMap(([path, watch]) =>
    typeof watch.queueUrl === 'string' && !problems.has(`${path}.queueUrl`) ? [watch.queueUrl] : [],
  );
}

/** The sink a primary sends to (its own, else the top-level one, else sqs). */
function sinkOf(document: Raw, watch: Raw): unknown {
  return watch.sink ?? document.sink ?? 'sqs';
}

function checkSomeQueue(document: Raw, problems: Problems): void {
  if (problems.has('queue.url') || stringField(document, problems, 'queue.url') !== undefined) return;
  const without = watchesOf(document, 'primaries').flatMap(([path, watch]) =>
    watch.queueUrl === undefined && sinkOf(document, watch) === 'sqs' ? [path] : [],
  );
  if (without.length === 0 && watchesOf(document, 'primaries').some(([, watch]) => sinkOf(document, watch) === 'eventbridge')) return;
  if (without.length === 0 && primaryQueueUrls(document, problems).length > 0) return;
  const which = without.length > 0 ? ` (${without.join(', ')} name${without.length === 1 ? 's' : ''} no queueUrl)` : '';
  problems.add(
    'queue.url',
    `is required${which}: the SQS queue URL, e.g. https://sqs.eu-west-1.amazonaws.com/123456789012/operless-work (env OPERLESS_QUEUE_URL), or set queueUrl on every primary`,
  );
}

/** A primary sending to EventBridge needs the bus; a queueUrl on such a primary would be ignored, so it is refused. */
function checkEventBus(document: Raw, problems: Problems): void {
  const toBus = watchesOf(document, 'primaries').filter(([, watch]) => sinkOf(document, watch) === 'eventbridge');
  for (const [path, watch] of toBus) {
    if (watch.queueUrl !== undefined)
      problems.add(
        `${path}.queueUrl`,
        'must be absent when the kind sends to eventbridge (a rule on the bus routes its events to the queue); remove it or set sink: sqs',
      );
  }
  if (toBus.length === 0 || problems.has('eventBus.name') || stringField(document, problems, 'eventBus.name') !== undefined) return;
  problems.add(
    'eventBus.name',
    `is required: ${toBus.map(([path]) => path).join(', ')} send${toBus.length === 1 ? 's' : ''} to eventbridge; set the event bus name or ARN, e.g. operless`,
  );
}

/**
 * A bulk queue must be a different, standard queue of an SQS primary: per-key order cannot span
 * two queues, so a `.fifo` queue keeps its resyncs in its own groups (docs/forwarder.md, "Live
 * changes before the backlog").
 */
function checkBulkQueues(document: Raw, problems: Problems): void {
  const fifo =
    'must be absent for a .fifo queue: per-key order cannot span two queues, so a per-key kind keeps its resyncs in its own FIFO queue (docs/forwarder.md, "Live changes before the backlog")';
  const bulkUrl = problems.has('queue.bulkUrl') ? undefined : stringField(document, problems, 'queue.bulkUrl');
  const url = problems.has('queue.url') ? undefined : stringField(document, problems, 'queue.url');
  if (bulkUrl !== undefined) {
    if (bulkUrl.endsWith('.fifo') || url?.endsWith('.fifo')) problems.add('queue.bulkUrl', fifo);
    else if (bulkUrl === url) problems.add('queue.bulkUrl', 'must differ from queue.url (it is the queue the backlog goes to instead)');
  }
  for (const [path, watch] of watchesOf(document, 'primaries')) {
    const bulk = watch.bulkQueueUrl;
    if (typeof bulk !== 'string' || problems.has(`${path}.bulkQueueUrl`)) continue;
    const own = typeof watch.queueUrl === 'string' ? watch.queueUrl : url;
    if (sinkOf(document, watch) === 'eventbridge')
      problems.add(`${path}.bulkQueueUrl`, 'must be absent when the kind sends to eventbridge (a rule on the bus routes its events)');
    else if (bulk.endsWith('.fifo') || own?.endsWith('.fifo')) problems.add(`${path}.bulkQueueUrl`, fifo);
    else if (bulk === own) problems.add(`${path}.bulkQueueUrl`, "must differ from the kind's queue (it is the queue the backlog goes to instead)");
  }
}

/** The AWS region named by an SQS queue URL (`https://sqs.<region>.amazonaws.com/...`), if any. */
export function regionOfQueueUrl(url: string): string | undefined {
  return url.match(/sqs\.([a-z0-9-]+)\.amazonaws\.com/)?.[1];
}

/** The region the queues use: `queue.region` (with its env overrides), else the first one a queue URL names. */
export function queueRegion(document: Raw, problems: Problems): string | undefined {
  const urls = [stringField(document, problems, 'queue.url'), ...primaryQueueUrls(document, problems)].filter((u) => u !== undefined);
  return stringField(document, problems, 'queue.region') ?? urls.map(regionOfQueueUrl).find((r) => r !== undefined);
}

const REGION = FORWARDER_CONFIG_SCHEMA.definitions?.region;

function checkRegion(document: Raw, problems: Problems): void {
  if (problems.has('queue.region')) return;
  const region = queueRegion(document, problems);
  const expected = REGION?.['x-expected'] ?? 'an AWS region';
  if (region === undefined) problems.add('queue.region', `is required: ${expected}`);
  else if (REGION?.pattern && !new RegExp(REGION.pattern).test(region)) problems.add('queue.region', `must be ${expected}, got ${JSON.stringify(region)}`);
}

/** An IPv4/IPv6 address or a host name (what `server.listen` takes), no spaces or ports. */
const LISTEN_HOST = /^(\[?[0-9A-Fa-f:.]+\]?|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?)$/;

function checkListenHost(document: Raw, problems: Problems): void {
  const host = stringField(document, problems, 'server.host');
  if (host !== undefined && !LISTEN_HOST.test(host))
    problems.add('server.host', `must be an address or host name to listen on, e.g. 0.0.0.0, :: or 127.0.0.1, got ${JSON.stringify(host)}`);
}

/** Runs every check on the document the schema validated (and defaulted), adding their problems. */
export function checkAcrossFields(document: unknown, problems: Problems): void {
  const root = mapping(document);
  if (!root) return;
  for (const check of [
    checkOrderings,
    checkLabelSelectors,
    checkClusterScopedNamespaces,
    checkWatchNamespacesInScope,
    checkKindsListedOnce,
    checkRelatedWatches,
    checkSomeQueue,
    checkEventBus,
    checkBulkQueues,
    checkRegion,
    checkListenHost,
  ])
    check(root, problems);
}
