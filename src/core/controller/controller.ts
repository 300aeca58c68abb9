/**
 * Stage src/core/controller/ — the author's API: what an operator author writes and gets back
 * (`ControllerSpec`, the reconcile context, the result union, `TerminalError`, the retry policy,
 * the rate limit and timer declarations, the resync period it reads). Guarantees: a spec is data,
 * checked once when defined; this folder imports no other stage of src/core/ but the resync
 * period, so the handler, the forwarder's watch list and the RBAC all derive from the same spec.
 *
 * `defineController(spec)`: a controller is a kind plus a `reconcile` function (and
 * optionally `finalize`). Defining one validates the spec and resolves its defaults once,
 * at module load, so a mistake (a missing plural, a bad retry policy) fails the cold start
 * with a message that says what to fix, not the first reconcile.
 *
 * Optional per-object timers (timer.ts) and a rate limit shared by every invocation
 * (rate-limit.ts) are validated here too, each error naming its field.
 *
 * Defaults: finalizer `<group>/finalizer` (core kinds: `operless.dev/finalizer`), field
 * manager `operless-<kind lower-case>`, retry policy from retry-policy.ts (1 s doubling, 900 s
 * cap, 10 attempts).
 */
import { defaultFieldManager } from '../../contract/field-manager.ts';
import type { ObjectRef } from '../../contract/message.ts';
import { isApiVersion, isDnsLabel, isKind, isQualifiedName, KIND_MAX_LENGTH } from '../../contract/names.ts';
import { relatedMappingProblem } from '../../contract/related.ts';
import { apiGroup } from '../../kube/paths.ts';
import { resolveRetryPolicy } from './retry-policy.ts';
import { resolveResyncPeriod } from '../resync/resync-period.ts';
import { resolveRateLimit, type ResolvedRateLimit } from './rate-limit.ts';
import { resolveTimers } from './timer.ts';
import type { ControllerSpec, RetryPolicy, TimerSpec } from './types.ts';
import type { KindRef, KubeObject } from '../../kube/types.ts';

export interface Controller<T extends KubeObject = KubeObject> {
  /** Short name for logs and metrics: the kind in lower case. */
  readonly name: string;
  readonly kind: KindRef;
  /** Set exactly when the spec has `finalize`. */
  readonly finalizer: string | undefined;
  readonly fieldManager: string;
  readonly retry: RetryPolicy;
  /** Seconds between scheduled resyncs of the kind (`spec.resync`, default 600). */
  readonly resyncSeconds: number;
  /** The per-object timers (`spec.timers`, validated; empty when none). */
  readonly timers: readonly TimerSpec<T>[];
  /** The shared rate limit (`spec.rateLimit`, validated), when declared. */
  readonly rateLimit: ResolvedRateLimit | undefined;
  readonly spec: ControllerSpec<T>;
  /** True when a message names this controller's kind (group and kind; any version). */
  handles(ref: Pick<ObjectRef, 'apiVersion' | 'kind'>): boolean;
}

export function defineController<T extends KubeObject = KubeObject>(spec: ControllerSpec<T>): Controller<T> {
  const where = `defineController(${spec?.kind ?? '?'})`;
  if (!spec || typeof spec !== 'object') throw new TypeError('defineController needs a spec object: { apiVersion, kind, plural, namespaced, reconcile }');
  if (!isApiVersion(spec.apiVersion)) {
    throw new TypeError(`${where}: apiVersion must look like "v1" or "cache.example.com/v1alpha1", got ${JSON.stringify(spec.apiVersion)}`);
  }
  if (!isKind(spec.kind)) {
    throw new TypeError(`${where}: kind must be PascalCase like "Memcached", at most ${KIND_MAX_LENGTH} characters, got ${JSON.stringify(spec.kind)}`);
  }
  if (!isDnsLabel(spec.plural)) {
    throw new TypeError(`${where}: plural must be the lower-case resource name used in REST paths (e.g. "memcacheds"), got ${JSON.stringify(spec.plural)}`);
  }
  if (typeof spec.namespaced !== 'boolean') {
    throw new TypeError(`${where}: namespaced must be true or false (the CRD's scope)`);
  }
  if (typeof spec.reconcile !== 'function') throw new TypeError(`${where}: reconcile(object, ctx) is required`);
  if (spec.finalize !== undefined && typeof spec.finalize !== 'function') {
    throw new TypeError(`${where}: finalize must be a function when given`);
  }
  const group = apiGroup(spec.apiVersion);
  const finalizer = spec.finalize ? (spec.finalizer ?? `${group || 'operless.dev'}/finalizer`) : undefined;
  if (finalizer !== undefined && (!isQualifiedName(finalizer) || !finalizer.includes('/'))) {
    throw new TypeError(`${where}: finalizer must be a domain-qualified name like "cache.example.com/finalizer", got ${JSON.stringify(finalizer)}`);
  }
  checkRelatedWatches(where, spec);
  const retry = prefixed(where, () => resolveRetryPolicy(spec.retry));
  const resyncSeconds = prefixed(where, () => resolveResyncPeriod(spec.resync));
  const timers = prefixed(where, () => resolveTimers<T>(spec.timers));
  const rateLimit = prefixed(where, () => resolveRateLimit(spec.rateLimit));
  const kind: KindRef = Object.freeze({ apiVersion: spec.apiVersion, kind: spec.kind, plural: spec.plural, namespaced: spec.namespaced });
  return Object.freeze({
    name: spec.kind.toLowerCase(),
    kind,
    finalizer,
    fieldManager: spec.fieldManager ?? defaultFieldManager(spec.kind),
    retry,
    resyncSeconds,
    timers,
    rateLimit,
    spec,
    handles: (ref: Pick<ObjectRef, 'apiVersion' | 'kind'>) => ref.kind === spec.kind && apiGroup(ref.apiVersion) === group,
  });
}

/** Runs a resolver, prefixing its error with the controller it belongs to. */
function prefixed<R>(where: string, resolve: () => R): R {
  try {
    return resolve();
  } catch (err) {
    throw new TypeError(`${where}: ${(err as Error).message}`);
  }
}

/** Related watches: namespaced kinds (a mapping never crosses namespaces) of a namespaced primary, each with a valid mapping. */
function checkRelatedWatches<T extends KubeObject>(where: string, spec: ControllerSpec<T>): void {
  if (spec.watches === undefined) return;
  if (!Array.isArray(spec.watches)) throw new TypeError(`${where}: watches must be a list of { kind, map }`);
  if (spec.watches.length > 0 && !spec.namespaced)
    throw new TypeError(`${where}: watches needs a namespaced primary (a related object maps to primaries in its own namespace)`);
  spec.watches.forEach((w, i) => {
    const at = `${where}: watches[${i}]`;
    if (typeof w !== 'object' || w === null || typeof w.kind !== 'object' || w.kind === null) throw new TypeError(`${at} must be { kind: KindRef, map }`);
    if (!isApiVersion(w.kind.apiVersion) || !isKind(w.kind.kind) || !isDnsLabel(w.kind.plural))
      throw new TypeError(`${at}.kind must be a KindRef like { apiVersion: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true }`);
    if (w.kind.namespaced !== true)
      throw new TypeError(`${at}.kind: ${w.kind.kind} must be namespaced (a related object maps to primaries in its own namespace)`);
    const problem = relatedMappingProblem(w.map);
    if (problem) throw new TypeError(`${at}.map ${problem}`);
  });
}
