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
 *
 * Partitions: the STS and EKS hostnames carry the partition's DNS suffix (`amazonaws.com`, or
 * `amazonaws.com.cn` for `cn-*` regions; `us-gov-*` regions are `aws-us-gov` on
 * `amazonaws.com`); the token is signed for the cluster's own region and that region's STS
 * host, as aws-iam-authenticator verifies it. An overridden endpoint (`AWS_ENDPOINT_URL_EKS`,
 * `OPERLESS_EKS_ENDPOINT`) must be `https://` — plain http only to a loopback address (a
 * local test server) — since a signed request or the bearer token would otherwise cross the
 * network in clear. A 401 from the API server drops the cached token (transport.ts calls
 * `unauthorized`), so the next request carries a fresh one.
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
/**
 * Deadline of the DescribeCluster call (it answers in well under a second). It runs on a cold
 * start of every function that reaches EKS without OPERLESS_EKS_ENDPOINT/OPERLESS_EKS_CA,
 * including the webhooks function, whose Lambda timeout (9 s, below the webhooks'
 * `timeoutSeconds` 10) must still hold the admission itself after it: 3 s leaves it 6 s
 * (test/unit/kube/eks-deadline.test.ts checks the two against serverless.yml).
 */
export const DESCRIBE_CLUSTER_TIMEOUT_MS = 3_000;

export type Partition = 'aws' | 'aws-cn' | 'aws-us-gov';

/** The partition of `region` and its DNS suffix. Pure. */
export function partitionOf(region: string): { readonly partition: Partition; readonly dnsSuffix: string } {
  if (region.startsWith('cn-')) return { partition: 'aws-cn', dnsSuffix: 'amazonaws.com.cn' };
  if (region.startsWith('us-gov-')) return { partition: 'aws-us-gov', dnsSuffix: 'amazonaws.com' };
  return { partition: 'aws', dnsSuffix: 'amazonaws.com' };
}

/** The regional endpoint host of `service` (`sts`, `eks`) in `region`'s partition. Pure. */
export function serviceHost(service: 'sts' | 'eks', region: string): string {
  return `${service}.${region}.${partitionOf(region).dnsSuffix}`;
}

/**
 * `url` when it may carry signed requests or a bearer token: `https:`, or `http:` to a
 * loopback address only; else an error naming `variable`. Pure.
 */
export function secureEndpoint(url: string, variable: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`${variable}=${url} is not a URL (expected https://host[:port])`);
  }
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(parsed.hostname);
  if (parsed.protocol === 'https:' || (parsed.protocol === 'http:' && loopback)) return parsed;
  throw new Error(
    `${variable}=${url} must be an https:// URL (plain http is accepted only for a loopback test server): signed requests and tokens must not cross the network in clear`,
  );
}

/** The EKS bearer token for `cluster`, signed at `date` (pure given its inputs). */
export async function eksToken(cluster: string, region: string, credentials: AwsCredentials, date: Date): Promise<string> {
  const url = await presignedUrl(
    awsSigner(region, 'sts', credentials),
    {
      method: 'GET',
      host: serviceHost('sts', region),
      path: '/',
      query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
      headers: { 'x-k8s-aws-id': cluster },
    },
    60,
    date,
  );
  return TOKEN_PREFIX + Buffer.from(url, 'utf8').toString('base64url');
}

/** A token source that re-mints before expiry, or at once after `invalidate()` (the API server said 401). */
export interface TokenSource {
  (): Promise<string>;
  invalidate(): void;
}

export function cachedToken(mint: () => Promise<string>, now: () => number = Date.now, refreshMs = TOKEN_REFRESH_MS): TokenSource {
  let cached: { token: Promise<string>; at: number } | undefined;
  const get = () => {
    if (!cached || now() - cached.at >= refreshMs) {
      const token = mint();
      cached = { token, at: now() };
      token.catch(() => {
        cached = undefined;
      });
    }
    return cached.token;
  };
  return Object.assign(get, {
    invalidate: () => {
      cached = undefined;
    },
  });
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

export async function describeCluster(
  cluster: string,
  region: string,
  credentials: AwsCredentials,
  options: DescribeClusterOptions = {},
): Promise<ClusterInfo> {
  const base = options.endpoint ? secureEndpoint(options.endpoint, 'AWS_ENDPOINT_URL_EKS') : new URL(`https://${serviceHost('eks', region)}`);
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
    throw new Error(
      `EKS DescribeCluster ${cluster} in ${region} at ${base.origin} ${timedOut ? `got no answer within ${timeoutMs} ms` : `failed: ${err instanceof Error ? err.message : String(err)}`} (check the network path to EKS, or set OPERLESS_EKS_ENDPOINT and OPERLESS_EKS_CA)`,
      { cause: err },
    );
  }
  if (!res.ok) {
    throw new Error(
      `EKS DescribeCluster ${cluster} in ${region} failed: ${res.status} ${text.slice(0, 300)} (the function's role needs eks:DescribeCluster on this cluster, or set OPERLESS_EKS_ENDPOINT and OPERLESS_EKS_CA)`,
    );
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

/** The endpoint with its CA; the bearer token comes from `token` on every request and is dropped on a 401. */
export function eksEndpoint(info: ClusterInfo, token: () => Promise<string>, invalidate?: () => void): EndpointAuth {
  const ca = Buffer.from(info.caData, 'base64');
  return {
    server: info.endpoint,
    credentials: async () => ({ ca, headers: {} }),
    bearerToken: token,
    ...(invalidate ? { unauthorized: invalidate } : {}),
  };
}

export async function eksAccess(
  cluster: string,
  region: string | undefined,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<EndpointAuth> {
  if (!region) throw new Error(`OPERLESS_EKS_CLUSTER=${cluster} needs a region: set AWS_REGION`);
  const credentials = () => defaultCredentials(env);
  // The bearer token goes to this endpoint: https only (checked, then used as given).
  if (env.OPERLESS_EKS_ENDPOINT) secureEndpoint(env.OPERLESS_EKS_ENDPOINT, 'OPERLESS_EKS_ENDPOINT');
  const info =
    env.OPERLESS_EKS_ENDPOINT && env.OPERLESS_EKS_CA
      ? { endpoint: env.OPERLESS_EKS_ENDPOINT, caData: env.OPERLESS_EKS_CA }
      : await describeCluster(cluster, region, await credentials(), { endpoint: env.AWS_ENDPOINT_URL_EKS });
  const token = cachedToken(async () => eksToken(cluster, region, await credentials(), new Date()));
  return eksEndpoint(info, token, token.invalidate);
}
