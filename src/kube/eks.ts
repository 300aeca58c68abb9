/**
 * EKS access from a function, without kubectl or aws-iam-authenticator:
 * - endpoint and CA: `OPERLESS_EKS_ENDPOINT` + `OPERLESS_EKS_CA` when set at deploy time
 *   (no API call on cold start), else EKS `DescribeCluster` (needs `eks:DescribeCluster`);
 * - bearer token: `k8s-aws-v1.` + base64url(presigned STS `GetCallerIdentity` URL, with
 *   the `x-k8s-aws-id: <cluster>` header signed, `X-Amz-Expires=60`). The API server accepts
 *   it for 15 minutes from its signing time; it is cached and re-minted after 10 minutes
 *   (`TOKEN_REFRESH_MS`), so it never expires mid-request.
 * - AWS credentials: the standard environment variables (what Lambda sets), else the AWS
 *   SDK's default provider chain (loaded only if needed; the Lambda runtime provides it).
 *
 * Both signatures (the presigned URL and DescribeCluster's `Authorization` header) are the AWS
 * SDK's own SigV4 signer, `@smithy/signature-v4`, over node:crypto's SHA-256; this module only
 * says what to sign. `DescribeCluster` goes to `https://eks.<region>.amazonaws.com`, or to the
 * SDK's standard endpoint override `AWS_ENDPOINT_URL_EKS` (a VPC endpoint, a test server); it
 * is signed for the host it goes to and has a deadline (`DESCRIBE_CLUSTER_TIMEOUT_MS`), so a
 * cold start never waits on an endpoint that does not answer.
 */
import { Sha256 } from '@smithy/core/checksum';
import { buildQueryString } from '@smithy/core/protocols';
import { SignatureV4 } from '@smithy/signature-v4';
import type { EndpointAuth } from './endpoint.ts';

/** AWS credentials, as the environment or the SDK's provider chain give them. */
export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string | undefined;
}

/** What one SigV4 signature covers: a request without a body, to `host`. */
interface Signable {
  readonly method: 'GET';
  readonly host: string;
  readonly path: string;
  readonly query?: Readonly<Record<string, string>>;
  /** Headers to sign besides `host` (lower-case names). */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * The SDK's SigV4 signer for `service` in `region`, as the SDK configures it for a service
 * other than S3: SHA-256 from node:crypto, the path escaped once more, no payload-hash header.
 */
export function awsSigner(region: string, service: string, credentials: AwsCredentials): SignatureV4 {
  return new SignatureV4({ credentials, region, service, sha256: Sha256, uriEscapePath: true, applyChecksum: false });
}

/** The request of `input` as the signer takes it (`host` is always signed). */
function signable(input: Signable) {
  return {
    method: input.method,
    protocol: 'https:',
    hostname: input.host,
    path: input.path,
    query: { ...input.query },
    headers: { ...input.headers, host: input.host },
  };
}

/** A presigned `https://` URL of `input` (query-string authentication), valid for `expiresSeconds` from `date`. */
export async function presignedUrl(signer: SignatureV4, input: Signable, expiresSeconds: number, date: Date): Promise<string> {
  const signed = await signer.presign(signable(input), { expiresIn: expiresSeconds, signingDate: date });
  return `https://${input.host}${input.path}?${buildQueryString(signed.query ?? {})}`;
}

/** The headers (with `authorization`, `x-amz-date` and `host`) that sign `input` at `date`. */
export async function signedHeaders(signer: SignatureV4, input: Signable, date: Date): Promise<Record<string, string>> {
  const signed = await signer.sign(signable(input), { signingDate: date });
  return { ...signed.headers };
}

export const TOKEN_PREFIX = 'k8s-aws-v1.';
export const TOKEN_REFRESH_MS = 10 * 60_000;
/** Deadline of the DescribeCluster call. */
export const DESCRIBE_CLUSTER_TIMEOUT_MS = 10_000;

/** The EKS bearer token for `cluster`, signed at `date` (pure given its inputs). */
export async function eksToken(cluster: string, region: string, credentials: AwsCredentials, date: Date): Promise<string> {
  const url = await presignedUrl(awsSigner(region, 'sts', credentials), {
    method: 'GET',
    host: `sts.${region}.amazonaws.com`,
    path: '/',
    query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
    headers: { 'x-k8s-aws-id': cluster },
  }, 60, date);
  return TOKEN_PREFIX + Buffer.from(url, 'utf8').toString('base64url');
}

/** A token source that re-mints before expiry. */
export function cachedToken(mint: () => Promise<string>, now: () => number = Date.now, refreshMs = TOKEN_REFRESH_MS): () => Promise<string> {
  let cached: { token: Promise<string>; at: number } | undefined;
  return () => {
    if (!cached || now() - cached.at >= refreshMs) {
      const token = mint();
      cached = { token, at: now() };
      token.catch(() => { cached = undefined; });
    }
    return cached.token;
  };
}

export async function defaultCredentials(env: Readonly<Record<string, string | undefined>> = process.env): Promise<AwsCredentials> {
  if (env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY) {
    return { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, sessionToken: env.AWS_SESSION_TOKEN };
  }
  const providerModule = '@aws-sdk/credential-provider-node';
  const { defaultProvider } = (await import(providerModule)) as { defaultProvider: () => () => Promise<AwsCredentials> };
  return defaultProvider()();
}

export interface ClusterInfo {
  readonly endpoint: string;
  /** Base64 PEM, as DescribeCluster returns it. */
  readonly caData: string;
}

export interface DescribeClusterOptions {
  /** Base URL of the EKS API (default `https://eks.<region>.amazonaws.com`). */
  readonly endpoint?: string | undefined;
  /** Deadline in ms (default `DESCRIBE_CLUSTER_TIMEOUT_MS`). */
  readonly timeoutMs?: number;
}

export async function describeCluster(cluster: string, region: string, credentials: AwsCredentials, options: DescribeClusterOptions = {}): Promise<ClusterInfo> {
  const base = new URL(options.endpoint || `https://eks.${region}.amazonaws.com`);
  const path = `${base.pathname.replace(/\/+$/, '')}/clusters/${encodeURIComponent(cluster)}`;
  const headers = await signedHeaders(awsSigner(region, 'eks', credentials), { method: 'GET', host: base.host, path }, new Date());
  const { host: _host, ...sendHeaders } = headers;
  const timeoutMs = options.timeoutMs ?? DESCRIBE_CLUSTER_TIMEOUT_MS;
  let res: Response;
  let text: string;
  try {
    res = await fetch(`${base.origin}${path}`, { headers: sendHeaders, signal: AbortSignal.timeout(timeoutMs) });
    text = await res.text();
  } catch (err) {
    const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
    throw new Error(`EKS DescribeCluster ${cluster} in ${region} at ${base.origin} ${timedOut ? `got no answer within ${timeoutMs} ms` : `failed: ${err instanceof Error ? err.message : String(err)}`} (check the network path to EKS, or set OPERLESS_EKS_ENDPOINT and OPERLESS_EKS_CA)`, { cause: err });
  }
  if (!res.ok) {
    throw new Error(`EKS DescribeCluster ${cluster} in ${region} failed: ${res.status} ${text.slice(0, 300)} (the function's role needs eks:DescribeCluster on this cluster, or set OPERLESS_EKS_ENDPOINT and OPERLESS_EKS_CA)`);
  }
  let body: { cluster?: { endpoint?: string; certificateAuthority?: { data?: string } } };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    throw new Error(`EKS DescribeCluster ${cluster} returned a body that is not JSON: ${text.slice(0, 200)}`);
  }
  const endpoint = body?.cluster?.endpoint;
  const caData = body?.cluster?.certificateAuthority?.data;
  if (!endpoint || !caData) throw new Error(`EKS DescribeCluster ${cluster} returned no endpoint/CA (is the cluster ACTIVE?)`);
  return { endpoint, caData };
}

/** The endpoint with its CA; the bearer token comes from `token` on every request. */
export function eksEndpoint(info: ClusterInfo, token: () => Promise<string>): EndpointAuth {
  const ca = Buffer.from(info.caData, 'base64');
  return {
    server: info.endpoint,
    credentials: async () => ({ ca, headers: {} }),
    bearerToken: token,
  };
}

export async function eksAccess(
  cluster: string,
  region: string | undefined,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<EndpointAuth> {
  if (!region) throw new Error(`OPERLESS_EKS_CLUSTER=${cluster} needs a region: set AWS_REGION`);
  const credentials = () => defaultCredentials(env);
  const info = env.OPERLESS_EKS_ENDPOINT && env.OPERLESS_EKS_CA
    ? { endpoint: env.OPERLESS_EKS_ENDPOINT, caData: env.OPERLESS_EKS_CA }
    : await describeCluster(cluster, region, await credentials(), { endpoint: env.AWS_ENDPOINT_URL_EKS });
  return eksEndpoint(info, cachedToken(async () => eksToken(cluster, region, await credentials(), new Date())));
}
