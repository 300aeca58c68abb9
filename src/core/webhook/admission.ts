/**
 * The wire shapes of Kubernetes webhooks — `admission.k8s.io/v1` AdmissionReview and
 * `apiextensions.k8s.io/v1` ConversionReview — decoded from untrusted JSON and answered.
 *
 * Guarantees: `decodeReview` never throws; it returns the typed request or a problem naming
 * the first field that is wrong (size, type, missing uid, unknown kind). Answers always echo
 * the request's `uid` and `apiVersion`, as the API server requires; a denial carries an HTTP
 * status code and the handler's message, which kubectl prints as the error. Pure.
 */
import type { KubeObject } from '../../kube/types.ts';
import type { JsonPatchOperation } from './json-patch.ts';

/** Which webhook a review is for: the forwarder's route (`/default`, `/validate`, `/convert`). */
export type WebhookRoute = 'default' | 'validate' | 'convert';
export const WEBHOOK_ROUTES: readonly WebhookRoute[] = ['default', 'validate', 'convert'];

/** What the forwarder sends a webhook function: the route it was called on and the review body as received. */
export interface WebhookInvocation {
  readonly route: WebhookRoute;
  readonly review: unknown;
}

export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
const OPERATIONS: readonly string[] = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'];

export interface AdmissionUser {
  readonly username?: string;
  readonly groups?: readonly string[];
}

/** The fields of an AdmissionRequest a handler reads. */
export interface AdmissionRequest {
  readonly uid: string;
  readonly apiVersion: string;
  readonly kind: { readonly group: string; readonly version: string; readonly kind: string };
  readonly operation: AdmissionOperation;
  readonly name: string | undefined;
  readonly namespace: string | undefined;
  readonly object: KubeObject | undefined;
  readonly oldObject: KubeObject | undefined;
  readonly dryRun: boolean;
  readonly userInfo: AdmissionUser;
}

export interface ConversionRequest {
  readonly uid: string;
  readonly apiVersion: string;
  readonly desiredAPIVersion: string;
  readonly objects: readonly KubeObject[];
}

export type DecodedReview =
  | { readonly type: 'admission'; readonly request: AdmissionRequest }
  | { readonly type: 'conversion'; readonly request: ConversionRequest }
  | { readonly type: 'invalid'; readonly problem: string; readonly uid: string | undefined; readonly apiVersion: string | undefined };

const REVIEW_API_VERSIONS: Record<string, string> = {
  AdmissionReview: 'admission.k8s.io/v1',
  ConversionReview: 'apiextensions.k8s.io/v1',
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isObject(value: unknown): value is KubeObject {
  return (
    isRecord(value) && typeof value.apiVersion === 'string' && typeof value.kind === 'string' && (value.metadata === undefined || isRecord(value.metadata))
  );
}

function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** Decodes a review body; `problem` says what is wrong when it is not one. */
export function decodeReview(body: unknown): DecodedReview {
  if (!isRecord(body)) return invalid('the body is not a JSON object');
  const kind = body.kind;
  const expected = typeof kind === 'string' ? REVIEW_API_VERSIONS[kind] : undefined;
  if (!expected || !Object.hasOwn(REVIEW_API_VERSIONS, kind as string))
    return invalid(`kind must be AdmissionReview or ConversionReview, got ${JSON.stringify(kind)?.slice(0, 80)}`);
  if (body.apiVersion !== expected)
    return invalid(`apiVersion of a ${kind as string} must be ${expected}, got ${JSON.stringify(body.apiVersion)?.slice(0, 80)}`);
  const request = body.request;
  if (!isRecord(request)) return invalid(`${kind as string}.request is missing or not an object`, undefined, expected);
  const uid = typeof request.uid === 'string' && request.uid.length > 0 && request.uid.length <= 128 ? request.uid : undefined;
  if (!uid) return invalid('request.uid must be a non-empty string of at most 128 characters', undefined, expected);
  return kind === 'AdmissionReview' ? decodeAdmission(request, uid, expected) : decodeConversion(request, uid, expected);
}

function invalid(problem: string, uid?: string, apiVersion?: string): DecodedReview {
  return { type: 'invalid', problem, uid, apiVersion };
}

function decodeAdmission(request: Record<string, unknown>, uid: string, apiVersion: string): DecodedReview {
  const operation = request.operation;
  if (typeof operation !== 'string' || !OPERATIONS.includes(operation))
    return invalid(`request.operation must be one of ${OPERATIONS.join(', ')}`, uid, apiVersion);
  const kind = request.kind;
  if (!isRecord(kind) || typeof kind.kind !== 'string' || typeof kind.version !== 'string' || typeof (kind.group ?? '') !== 'string') {
    return invalid('request.kind must be { group, version, kind }', uid, apiVersion);
  }
  const object = request.object ?? undefined;
  const oldObject = request.oldObject ?? undefined;
  if (object !== undefined && !isObject(object)) return invalid('request.object must be a Kubernetes object (apiVersion, kind, metadata)', uid, apiVersion);
  if (oldObject !== undefined && !isObject(oldObject))
    return invalid('request.oldObject must be a Kubernetes object (apiVersion, kind, metadata)', uid, apiVersion);
  const user = isRecord(request.userInfo) ? request.userInfo : {};
  const groups = Array.isArray(user.groups) ? user.groups.filter((g): g is string => typeof g === 'string') : undefined;
  return {
    type: 'admission',
    request: {
      uid,
      apiVersion,
      kind: { group: (kind.group as string | undefined) ?? '', version: kind.version, kind: kind.kind },
      operation: operation as AdmissionOperation,
      name: optionalString(request.name),
      namespace: optionalString(request.namespace),
      object,
      oldObject,
      dryRun: request.dryRun === true,
      userInfo: { username: optionalString(user.username), ...(groups ? { groups } : {}) },
    },
  };
}

function decodeConversion(request: Record<string, unknown>, uid: string, apiVersion: string): DecodedReview {
  const desired = request.desiredAPIVersion;
  if (typeof desired !== 'string' || desired === '') return invalid('request.desiredAPIVersion must be a non-empty string', uid, apiVersion);
  const objects = request.objects;
  if (!Array.isArray(objects)) return invalid('request.objects must be an array', uid, apiVersion);
  const index = objects.findIndex((o) => !isObject(o));
  if (index >= 0) return invalid(`request.objects[${index}] must be a Kubernetes object (apiVersion, kind, metadata)`, uid, apiVersion);
  return { type: 'conversion', request: { uid, apiVersion, desiredAPIVersion: desired, objects: objects as KubeObject[] } };
}

/** The `response` of an AdmissionReview. */
export interface AdmissionAnswer {
  readonly allowed: boolean;
  /** Shown to the user when denied (kubectl prints it). */
  readonly message?: string;
  /** HTTP-like code of a denial (default 403 for a denial by a handler). */
  readonly code?: number;
  readonly reason?: string;
  readonly warnings?: readonly string[];
  readonly patch?: readonly JsonPatchOperation[];
}

/** The AdmissionReview body that answers `uid`. */
export function admissionReviewResponse(apiVersion: string, uid: string, answer: AdmissionAnswer): Record<string, unknown> {
  const response: Record<string, unknown> = { uid, allowed: answer.allowed };
  if (!answer.allowed) {
    response.status = { code: answer.code ?? 403, message: answer.message ?? 'denied', ...(answer.reason ? { reason: answer.reason } : {}) };
  }
  if (answer.warnings && answer.warnings.length > 0) response.warnings = [...answer.warnings];
  if (answer.allowed && answer.patch && answer.patch.length > 0) {
    response.patchType = 'JSONPatch';
    response.patch = Buffer.from(JSON.stringify(answer.patch)).toString('base64');
  }
  return { apiVersion, kind: 'AdmissionReview', response };
}

/** The ConversionReview body that answers `uid`: the converted objects, or a failure message. */
export function conversionReviewResponse(
  apiVersion: string,
  uid: string,
  outcome: { readonly convertedObjects: readonly KubeObject[] } | { readonly failure: string },
): Record<string, unknown> {
  const response =
    'failure' in outcome
      ? { uid, convertedObjects: [], result: { status: 'Failure', message: outcome.failure } }
      : { uid, convertedObjects: outcome.convertedObjects, result: { status: 'Success' } };
  return { apiVersion, kind: 'ConversionReview', response };
}
