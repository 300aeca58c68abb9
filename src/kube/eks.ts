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
 */
import { presignUrl, signRequest, type AwsCredentials } from './sigv4.ts';
import type { EndpointAuth } from './transport.ts';

export const TOKEN_PREFIX = 'k8s-aws-v1.';
export const TOKEN_REFRESH_MS = 10 * 60_000;

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

export async function describeCluster(cluster: string, region: string, credentials: AwsCredentials): Promise<ClusterInfo> {
  const host = `eks.${region}.amazonaws.com`;
  const path = `/clusters/${cluster}`;
  const headers = signRequest({ method: 'GET', host, path, region, service: 'eks', credentials, date: new Date() });
  const { host: _host, ...sendHeaders } = headers;
  const res = await fetch(`https://${host}${path}`, { headers: sendHeaders });
  const text = await res.text();
  if (!res.ok) {
    throw new Error(`EKS DescribeCluster ${cluster} in ${region} failed: ${res.status} ${text.slice(0, 300)} (the function's role needs eks:DescribeCluster on this cluster, or set OPERLESS_EKS_ENDPOINT and OPERLESS_EKS_CA)`);
  }
  const body = JSON.parse(text) as { cluster?: { endpoint?: string; certificateAuthority?: { data?: string } } };
  const endpoint = body.cluster?.endpoint;
  const caData = body.cluster?.certificateAuthority?.data;
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
    : await describeCluster(cluster, region, await credentials());
  return eksEndpoint(info, cachedToken(async () => eksToken(cluster, region, await credentials(), new Date())));
}
