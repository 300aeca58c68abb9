/**
 * AWS Signature Version 4, the two forms EKS access needs, with node:crypto only (no SDK in
 * the function bundle):
 * - `presignUrl`: query-string signing (the STS `GetCallerIdentity` URL inside an EKS token);
 * - `signRequest`: `Authorization` header signing (the EKS `DescribeCluster` call).
 *
 * Follows the published algorithm (canonical request → string to sign → HMAC chain); unit
 * tests check it against AWS's documented signing examples and the AWS SDK's own signer.
 */
import { createHash, createHmac } from 'node:crypto';

export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string | undefined;
}

export interface SignInput {
  readonly method: string;
  readonly host: string;
  readonly path: string;
  readonly query?: Readonly<Record<string, string>>;
  /** Extra headers to sign (lower-case names); `host` is always signed. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly region: string;
  readonly service: string;
  readonly credentials: AwsCredentials;
  readonly date: Date;
  /** Hex SHA-256 of the payload; default: of the empty body. */
  readonly payloadHash?: string;
}

const sha256Hex = (data: string): string => createHash('sha256').update(data, 'utf8').digest('hex');
const hmac = (key: Buffer | string, data: string): Buffer => createHmac('sha256', key).update(data, 'utf8').digest();

export const EMPTY_PAYLOAD_HASH = sha256Hex('');

/** RFC 3986 encoding as SigV4 wants it (unreserved characters kept, everything else %XX). */
export function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** `20150830T123600Z`. */
export function amzDate(date: Date): string {
  return date.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
}

export function canonicalQuery(query: Readonly<Record<string, string>>): string {
  return Object.keys(query)
    .map((k) => [uriEncode(k), uriEncode(query[k] as string)] as const)
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

function canonicalHeaders(headers: Readonly<Record<string, string>>): { canonical: string; signed: string } {
  const entries = Object.entries(headers)
    .map(([k, v]) => [k.toLowerCase(), v.trim().replace(/\s+/g, ' ')] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    canonical: entries.map(([k, v]) => `${k}:${v}\n`).join(''),
    signed: entries.map(([k]) => k).join(';'),
  };
}

function signingKey(secret: string, day: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secret}`, day), region), service), 'aws4_request');
}

function signature(input: SignInput, query: Readonly<Record<string, string>>, headers: Readonly<Record<string, string>>): { signature: string; signedHeaders: string; scope: string } {
  const stamp = amzDate(input.date);
  const day = stamp.slice(0, 8);
  const scope = `${day}/${input.region}/${input.service}/aws4_request`;
  const { canonical, signed } = canonicalHeaders(headers);
  const canonicalRequest = [
    input.method.toUpperCase(),
    input.path.split('/').map(uriEncode).join('/') || '/',
    canonicalQuery(query),
    canonical,
    signed,
    input.payloadHash ?? EMPTY_PAYLOAD_HASH,
  ].join('\n');
  const stringToSign = ['AWS4-HMAC-SHA256', stamp, scope, sha256Hex(canonicalRequest)].join('\n');
  const sig = createHmac('sha256', signingKey(input.credentials.secretAccessKey, day, input.region, input.service))
    .update(stringToSign, 'utf8').digest('hex');
  return { signature: sig, signedHeaders: signed, scope };
}

/** A presigned URL (query-string authentication), valid for `expiresSeconds`. */
export function presignUrl(input: SignInput, expiresSeconds: number): string {
  const headers = { host: input.host, ...lower(input.headers) };
  const stamp = amzDate(input.date);
  const { signed } = canonicalHeaders(headers);
  const day = stamp.slice(0, 8);
  const query: Record<string, string> = {
    ...input.query,
    'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
    'X-Amz-Credential': `${input.credentials.accessKeyId}/${day}/${input.region}/${input.service}/aws4_request`,
    'X-Amz-Date': stamp,
    'X-Amz-Expires': String(expiresSeconds),
    'X-Amz-SignedHeaders': signed,
    ...(input.credentials.sessionToken ? { 'X-Amz-Security-Token': input.credentials.sessionToken } : {}),
  };
  const { signature: sig } = signature(input, query, headers);
  return `https://${input.host}${input.path}?${canonicalQuery(query)}&X-Amz-Signature=${sig}`;
}

/** Headers (incl. `authorization`) that sign a request in the `Authorization` header form. */
export function signRequest(input: SignInput): Record<string, string> {
  const headers: Record<string, string> = {
    host: input.host,
    'x-amz-date': amzDate(input.date),
    ...(input.credentials.sessionToken ? { 'x-amz-security-token': input.credentials.sessionToken } : {}),
    ...lower(input.headers),
  };
  const { signature: sig, signedHeaders, scope } = signature(input, input.query ?? {}, headers);
  return {
    ...headers,
    authorization: `AWS4-HMAC-SHA256 Credential=${input.credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${sig}`,
  };
}

function lower(headers: Readonly<Record<string, string>> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
}
