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
 * `DescribeCluster` goes to `https://eks.<region>.amazonaws.com`, or to the SDK's standard
 * endpoint override `AWS_ENDPOINT_URL_EKS` (a VPC endpoint, a test server); it is signed for
 * the host it goes to and has a deadline (`DESCRIBE_CLUSTER_TIMEOUT_MS`), so a cold start
 * never waits on an endpoint that does not answer.
 */
import { presignUrl, signRequest, type AwsCredentials } from './sigv4.ts';
import type { EndpointAuth } from './endpoint.ts';

export const TOKEN_PREFIX = 'k8s-aws-v1.';
export const TOKEN_REFRESH_MS = 10 * 60_000;
/** Deadline of the DescribeCluster call. */
export const DESCRIBE_CLUSTER_TIMEOUT_MS = 10_000;

/** The EKS bearer token for `cluster`, signed at `date` (pure given its inputs). */
export function eksToken(cluster: string, region: string, credentials: AwsCredentials, date: Date): string {
  const host = `sts.${region}.amazonaws.com`;
  const url = presignUrl({
    method: 'GET',
    host,
    path: '/',
    query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
    headers: { 'x-k8s-aws-id': cluster },
    region,
    service: 'sts',
    credentials,
    date,
  }, 60);
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
  const headers = signRequest({ method: 'GET', host: base.host, path, region, service: 'eks', credentials, date: new Date() });
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
