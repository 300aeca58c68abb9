/**
 * Stage src/core/webhook/ — admission and conversion webhooks, a handler of their own.
 * Guarantees: every invocation answers with a review the API server accepts or a stated problem;
 * the folder imports nothing else of src/core/.
 *
 * `defineWebhook(spec)` and `toWebhookHandler(webhook)`: admission (defaulting, validation)
 * and conversion webhooks of one kind, served by a function that the forwarder invokes
 * synchronously (docs/architecture.md, "Webhooks are functions behind the forwarder").
 *
 * - `default(object, ctx)` returns the defaulted object (or changes and returns its argument,
 *   a private copy); the runtime answers with the JSON patch from the request's object to it
 *   (json-patch.ts). Only `spec`, `metadata.labels` and `metadata.annotations` may change: a
 *   patch elsewhere is refused with a message naming the field.
 * - `validate(object, ctx)` returns `{ allowed: true, warnings? }` or `{ allowed: false,
 *   message }`; `ctx.oldObject` is set on UPDATE. The message is what kubectl prints.
 * - Neither is called for an object that is being deleted (`deletionTimestamp` set): its
 *   updates remove finalizers, and a webhook must never keep an object from going away. The
 *   generated configurations keep such writes, and every UPDATE that leaves the spec alone,
 *   from reaching the function at all (`matchConditions`, src/crd/webhooks.ts); this check
 *   covers a configuration made without them.
 * - `conversion: { hub, spokes }`: the hub is the storage version; each spoke converts to and
 *   from it, so any version reaches any other in at most two steps. `apiVersion` is set by
 *   the runtime; `metadata` is kept as it came, as the API server requires.
 *
 * Admission handlers see the hub version only: the generated webhook configurations list the
 * hub's version with `matchPolicy: Equivalent`, so the API server converts before calling.
 *
 * Guarantees: every invocation answers with a review the API server accepts — a hostile or
 * malformed body gets `{ problem }` (the forwarder answers HTTP 400), a handler that throws
 * or runs past its deadline denies the write (admission) or fails the conversion, with a
 * message that names the webhook, the object and the cause. Handlers get a logger (with the
 * object key and request uid on every line), a Kubernetes client for reads and an
 * AbortSignal that fires at the deadline.
 */
import type { Context } from 'aws-lambda';
import { createClientFactory, type ClientFactory } from '../../kube/factory.ts';
import { apiGroup } from '../../kube/paths.ts';
import type { KindRef, KubeClient, KubeObject } from '../../kube/types.ts';
import { createLogger, errorMessage, type Logger } from '../../observability/log.ts';
import {
  admissionReviewResponse,
  conversionReviewResponse,
  decodeReview,
  WEBHOOK_ROUTES,
  type AdmissionAnswer,
  type AdmissionRequest,
  type ConversionRequest,
  type WebhookInvocation,
  type WebhookRoute,
} from './admission.ts';
import { diffJson } from './json-patch.ts';

export interface AdmissionContext<T extends KubeObject = KubeObject> {
  readonly request: AdmissionRequest;
  /** The object before this UPDATE (hub version), undefined on CREATE. */
  readonly oldObject: T | undefined;
  readonly log: Logger;
  /** For reads (get, list) in the object's cluster. */
  readonly client: KubeClient;
  /** Fires when the answer is due; stop work then. */
  readonly signal: AbortSignal;
}

export type Validation =
  | { readonly allowed: true; readonly warnings?: readonly string[] }
  | { readonly allowed: false; readonly message: string; readonly warnings?: readonly string[] };

/** Converts one spoke version to and from the hub. */
export interface SpokeConversion<Hub extends KubeObject = KubeObject, Spoke extends KubeObject = KubeObject> {
  toHub(object: Spoke): Hub;
  fromHub(object: Hub): Spoke;
}

export interface WebhookSpec<T extends KubeObject = KubeObject> {
  /** The hub: the storage version's apiVersion, e.g. `cache.example.com/v1alpha1`. */
  readonly apiVersion: string;
  readonly kind: string;
  default?(object: T, ctx: AdmissionContext<T>): T | undefined | Promise<T | undefined>;
  validate?(object: T, ctx: AdmissionContext<T>): Validation | Promise<Validation>;
  /** Spokes by apiVersion (the hub is `apiVersion`). */
  readonly conversion?: { readonly spokes: Readonly<Record<string, SpokeConversion<T, KubeObject>>> };
}

export interface Webhook<T extends KubeObject = KubeObject> {
  readonly spec: WebhookSpec<T>;
  /** The routes this webhook serves (what the generated configurations point at). */
  readonly routes: readonly WebhookRoute[];
}

export function defineWebhook<T extends KubeObject = KubeObject>(spec: WebhookSpec<T>): Webhook<T> {
  const where = `defineWebhook(${spec?.kind ?? '?'})`;
  if (!spec || typeof spec !== 'object') throw new TypeError('defineWebhook needs a spec: { apiVersion, kind, default?, validate?, conversion? }');
  if (typeof spec.apiVersion !== 'string' || !apiGroup(spec.apiVersion))
    throw new TypeError(`${where}: apiVersion must be the hub (storage) version of a custom resource, like "cache.example.com/v1alpha1"`);
  for (const name of ['default', 'validate'] as const) {
    if (spec[name] !== undefined && typeof spec[name] !== 'function') throw new TypeError(`${where}: ${name} must be a function when given`);
  }
  for (const [version, spoke] of Object.entries(spec.conversion?.spokes ?? {})) {
    if (apiGroup(version) !== apiGroup(spec.apiVersion) || version === spec.apiVersion)
      throw new TypeError(`${where}: spoke ${version} must be another version of group ${apiGroup(spec.apiVersion)}`);
    if (typeof spoke?.toHub !== 'function' || typeof spoke.fromHub !== 'function')
      throw new TypeError(`${where}: spoke ${version} needs toHub and fromHub functions`);
  }
  const routes = WEBHOOK_ROUTES.filter((r) => (r === 'convert' ? spec.conversion !== undefined : spec[r] !== undefined));
  if (routes.length === 0) throw new TypeError(`${where}: give at least one of default, validate, conversion`);
  return Object.freeze({ spec, routes });
}

export interface WebhookHandlerOptions {
  /** Kubernetes clients (default: from the environment, see kube/factory.ts). */
  readonly clients?: ClientFactory;
  /** Cluster id (default `OPERLESS_CLUSTER` or `default`). */
  readonly cluster?: string;
  readonly log?: Logger;
  /** Time kept back to answer before the invocation's deadline, ms (default 250). */
  readonly reserveMs?: number;
}

/** What a webhook function returns: the review for the API server, or why there is none. */
export type WebhookResult = { readonly review: Record<string, unknown> } | { readonly problem: string };

export type WebhookLambdaHandler = (event: WebhookInvocation, context?: Pick<Context, 'getRemainingTimeInMillis' | 'awsRequestId'>) => Promise<WebhookResult>;

/** The Lambda handler for the webhooks of one or more kinds. */
export function toWebhookHandler(webhooks: Webhook<KubeObject> | readonly Webhook<KubeObject>[], options: WebhookHandlerOptions = {}): WebhookLambdaHandler {
  const list = Array.isArray(webhooks) ? webhooks : [webhooks as Webhook<KubeObject>];
  if (list.length === 0 || list.some((w) => !w || !Array.isArray(w.routes))) throw new TypeError('toWebhookHandler takes webhooks made by defineWebhook(spec)');
  const log = options.log ?? createLogger({ fields: { component: 'webhook' } });
  const clients = options.clients ?? createClientFactory();
  const cluster = options.cluster ?? process.env.OPERLESS_CLUSTER ?? 'default';
  const reserveMs = options.reserveMs ?? 250;
  let client: Promise<KubeClient> | undefined;
  const lazyClient = () =>
    (client ??= clients(cluster).catch((err: unknown) => {
      client = undefined;
      throw err;
    }));
  return async (event, context) => {
    const route = (event as Partial<WebhookInvocation> | null)?.route;
    if (typeof route !== 'string' || !WEBHOOK_ROUTES.includes(route as WebhookRoute))
      return { problem: `unknown webhook route ${JSON.stringify(route)?.slice(0, 40)} (expected ${WEBHOOK_ROUTES.join(', ')})` };
    const decoded = decodeReview(event.review);
    if (decoded.type === 'invalid') {
      log.warn('webhook review refused', { route, problem: decoded.problem, uid: decoded.uid });
      return { problem: decoded.problem };
    }
    const remaining = context?.getRemainingTimeInMillis?.() ?? 10_000;
    const signal = AbortSignal.timeout(Math.max(1, remaining - reserveMs));
    if (decoded.type === 'conversion') {
      if (route !== 'convert') return { problem: `a ConversionReview was sent to the ${route} webhook` };
      return { review: convertReview(list, decoded.request, log) };
    }
    if (route === 'convert') return { problem: 'an AdmissionReview was sent to the conversion webhook' };
    const request = decoded.request;
    const key = `${request.namespace ? `${request.namespace}/` : ''}${request.name ?? request.object?.metadata?.generateName ?? ''}`;
    const reqLog = log.child({ key, uid: request.uid, webhook: route, kind: request.kind.kind, operation: request.operation });
    const webhook = list.find((w) => w.spec.kind === request.kind.kind && apiGroup(w.spec.apiVersion) === request.kind.group);
    const answer = webhook
      ? await admit(webhook, route, request, { log: reqLog, signal, client: lazyClient })
      : {
          allowed: false,
          code: 500,
          message: `no ${route} webhook for ${request.kind.group}/${request.kind.kind} in this function: check the webhook configuration's rules`,
        };
    if (!answer.allowed) reqLog.info('admission denied', { message: answer.message });
    return { review: admissionReviewResponse(request.apiVersion, request.uid, answer) };
  };
}

interface AdmitEnv {
  readonly log: Logger;
  readonly signal: AbortSignal;
  readonly client: () => Promise<KubeClient>;
}

async function admit(webhook: Webhook<KubeObject>, route: 'default' | 'validate', request: AdmissionRequest, env: AdmitEnv): Promise<AdmissionAnswer> {
  const spec = webhook.spec;
  const object = request.object;
  const what = `${request.kind.kind} ${request.namespace ? `${request.namespace}/` : ''}${request.name ?? object?.metadata?.generateName ?? ''}`;
  const handler = route === 'default' ? spec.default : spec.validate;
  if (!handler || !object || request.operation === 'DELETE' || request.operation === 'CONNECT') return { allowed: true };
  // An object being deleted is only ever updated to remove finalizers: never block that.
  if (object.metadata?.deletionTimestamp) return { allowed: true };
  if (object.apiVersion !== spec.apiVersion) {
    return {
      allowed: false,
      code: 500,
      message: `the ${route} webhook of ${what} expects ${spec.apiVersion} (the hub) but got ${object.apiVersion}: set matchPolicy: Equivalent and list only the hub version in its rules`,
    };
  }
  try {
    const ctx: AdmissionContext = { request, oldObject: request.oldObject, log: env.log, client: deferredClient(env.client), signal: env.signal };
    const work = route === 'default' ? defaulted(spec, structuredClone(object), ctx) : validated(spec, object, ctx);
    return await raceDeadline(
      work,
      env.signal,
      `the ${route} webhook of ${what} did not answer in time; try again (a cold function answers faster the second time)`,
    );
  } catch (err) {
    env.log.error('webhook handler failed', { error: errorMessage(err) });
    return { allowed: false, code: 500, message: `the ${route} webhook of ${what} failed: ${errorMessage(err)}` };
  }

  async function defaulted(s: WebhookSpec<KubeObject>, copy: KubeObject, ctx: AdmissionContext): Promise<AdmissionAnswer> {
    const result = (await s.default?.(copy, ctx)) ?? copy;
    const patch = diffJson(object, result);
    const outside = patch.find((op) => !/^\/(spec|metadata\/labels|metadata\/annotations)(\/|$)/.test(op.path));
    if (outside) throw new Error(`the defaulting handler changed ${outside.path}; only spec, metadata.labels and metadata.annotations may be defaulted`);
    return { allowed: true, patch };
  }

  async function validated(s: WebhookSpec<KubeObject>, live: KubeObject, ctx: AdmissionContext): Promise<AdmissionAnswer> {
    const result = await s.validate?.(live, ctx);
    if (!result || typeof result.allowed !== 'boolean') throw new Error('the validation handler must return { allowed: true } or { allowed: false, message }');
    if (result.allowed) return { allowed: true, warnings: result.warnings };
    return { allowed: false, code: 422, reason: 'Invalid', message: `${what}: ${result.message}`, warnings: result.warnings };
  }
}

function raceDeadline<T>(work: Promise<T>, signal: AbortSignal, message: string): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error(message));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error(message));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Converts every object of a ConversionReview through the hub; one failure fails the review. */
export function convertReview(webhooks: readonly Webhook<KubeObject>[], request: ConversionRequest, log: Logger): Record<string, unknown> {
  try {
    const converted = request.objects.map((object) => convertObject(webhooks, object, request.desiredAPIVersion));
    return conversionReviewResponse(request.apiVersion, request.uid, { convertedObjects: converted });
  } catch (err) {
    log.warn('conversion failed', { uid: request.uid, desired: request.desiredAPIVersion, error: errorMessage(err) });
    return conversionReviewResponse(request.apiVersion, request.uid, { failure: errorMessage(err) });
  }
}

function convertObject(webhooks: readonly Webhook<KubeObject>[], object: KubeObject, desired: string): KubeObject {
  const name = `${object.kind} ${object.metadata?.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata?.name ?? ''}`;
  const webhook = webhooks.find((w) => w.spec.kind === object.kind && apiGroup(w.spec.apiVersion) === apiGroup(object.apiVersion) && w.spec.conversion);
  if (!webhook) throw new Error(`no conversion for ${object.apiVersion} ${object.kind} in this function`);
  if (object.apiVersion === desired) return object;
  const hub = webhook.spec.apiVersion;
  const spokes = webhook.spec.conversion?.spokes ?? {};
  const step = (version: string) => {
    const spoke = spokes[version];
    if (!spoke) throw new Error(`${name}: no conversion between ${version} and the hub ${hub} (known: ${[hub, ...Object.keys(spokes)].join(', ')})`);
    return spoke;
  };
  const metadata = object.metadata;
  const checked = (value: unknown, what: string): KubeObject => {
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new Error(`${name}: the conversion ${what} returned ${value === null ? 'null' : typeof value}, not an object`);
    return value as KubeObject;
  };
  const asHub =
    object.apiVersion === hub
      ? object
      : { ...checked(step(object.apiVersion).toHub(structuredClone(object)), `${object.apiVersion} → ${hub}`), apiVersion: hub };
  const result = desired === hub ? asHub : checked(step(desired).fromHub(structuredClone(asHub)), `${hub} → ${desired}`);
  return { ...result, apiVersion: desired, kind: object.kind, metadata };
}

/**
 * A client that makes the real one on first use: a handler that reads nothing needs no
 * Kubernetes configuration (a webhook function without one still answers), and one that reads
 * gets the configuration's error from the read, which the review then reports.
 */
function deferredClient(get: () => Promise<KubeClient>): KubeClient {
  return {
    get: async <T extends KubeObject>(kind: KindRef, name: string, namespace?: string) => (await get()).get<T>(kind, name, namespace),
    list: async <T extends KubeObject>(kind: KindRef, options?: Parameters<KubeClient['list']>[1]) => (await get()).list<T>(kind, options),
    apply: async <T extends KubeObject>(kind: KindRef, object: KubeObject, options?: { force?: boolean }) => (await get()).apply<T>(kind, object, options),
    applyStatus: async <T extends KubeObject>(kind: KindRef, object: KubeObject) => (await get()).applyStatus<T>(kind, object),
    mergePatch: async <T extends KubeObject>(kind: KindRef, name: string, namespace: string | undefined, patch: object) =>
      (await get()).mergePatch<T>(kind, name, namespace, patch),
    delete: async (kind: KindRef, name: string, namespace?: string) => (await get()).delete(kind, name, namespace),
    create: async <T extends KubeObject>(kind: KindRef, object: KubeObject) => (await get()).create<T>(kind, object),
  };
}
