/**
 * Where an API server is and how to authenticate to it: the `EndpointAuth` a transport
 * (transport.ts) is built from, and the TLS material and headers it yields. Types only; the
 * sources are kubeconfig.ts (a `KubeConfig`), eks.ts (EKS) or the caller's own. Kept apart
 * from transport.ts so that a source of credentials and the transport that uses them import
 * this module, not each other.
 */

/** TLS material and headers for one API server. */
export interface EndpointCredentials {
  readonly ca?: Buffer | string | undefined;
  readonly cert?: Buffer | string | undefined;
  readonly key?: Buffer | string | undefined;
  /** false only for `insecure-skip-tls-verify`. */
  readonly rejectUnauthorized?: boolean | undefined;
  readonly servername?: string | undefined;
  /** Authorization and other headers. */
  readonly headers: Readonly<Record<string, string>>;
}

export interface EndpointAuth {
  /** `https://host:port` (or `http://` for a plain-text test server). */
  readonly server: string;
  credentials(): Promise<EndpointCredentials>;
  /** Supplies a bearer token per request, overriding `credentials().headers.Authorization`. */
  readonly bearerToken?: () => Promise<string>;
  /** Called when the API server answered 401: drop any cached token, so the next request mints a fresh one. */
  readonly unauthorized?: () => void;
}
