/**
 * A loopback fault proxy in front of a REAL kube-apiserver, for tests: plain HTTP on a free
 * port, forwarding every request (headers, bearer token, body) to the API server over TLS
 * verified with the test CA — except the requests a test's rule picks, which it answers
 * with an injected status, holds until released, or stalls (headers sent, then nothing, as a
 * half-open connection looks).
 *
 * Guarantees: every request is recorded (`requests`) with its method, path, query and Accept header and
 * whether the client gave up on it (`aborted`); a held or stalled request is ended when the
 * client closes it or at `close()`; rules are consulted in order, the first match wins, and
 * a rule with `times` stops matching after that many uses. Token identities only (the admin,
 * ServiceAccounts): a client certificate ends at the proxy.
 */
import http from 'node:http';
import https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import type { ControlPlane, Identity } from '../../src/testing/index.ts';

export type FaultAction =
  /** Answer with this status and a Kubernetes Status body (or the given body). */
  | { readonly respond: number; readonly reason?: string; readonly message?: string; readonly body?: unknown }
  /** A 200 watch stream of these events, then a clean close (no upstream request). */
  | { readonly events: readonly { readonly type: string; readonly object: unknown }[] }
  /** Forward once the promise this returns resolves (a request held while the test acts, or delayed). */
  | { readonly hold: () => Promise<void> }
  /** Never answer (the request hangs until the client gives up or the proxy closes). */
  | { readonly hang: true }
  /** 200 and headers, then silence: a half-open watch. */
  | { readonly stall: true };

export interface FaultRule {
  readonly method?: string;
  /** Matched against the path (without the query). */
  readonly path?: RegExp;
  /** Only watch requests (`watch=true`), or only non-watch requests. */
  readonly watch?: boolean;
  /** Stop matching after this many uses (default: forever). */
  readonly times?: number;
  readonly action: FaultAction;
}

export interface ProxiedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  /** The client's `Accept` header. */
  readonly accept: string;
  /** The rule's action kind, or 'forwarded'. */
  readonly handled: string;
  /** The client closed the request before it was answered. */
  aborted: boolean;
  /** Forwarded watch streams: the lines the API server sent. */
  readonly lines: string[];
}

export interface KubeFaultProxy {
  readonly url: string;
  readonly requests: ProxiedRequest[];
  /** Adds a rule (checked before the earlier ones). Returns a function removing it. */
  inject(rule: FaultRule): () => void;
  /** A kubeconfig for `identity` (default: the admin) through the proxy. */
  kubeConfig(identity?: Identity): KubeConfig;
  close(): Promise<void>;
}

export async function startKubeFaultProxy(cp: ControlPlane): Promise<KubeFaultProxy> {
  const upstream = new URL(cp.server);
  const agent = new https.Agent({ keepAlive: true, ca: cp.caPem });
  const rules: { rule: FaultRule; left: number }[] = [];
  const requests: ProxiedRequest[] = [];
  const open = new Set<http.ServerResponse>();

  const match = (req: http.IncomingMessage, url: URL): FaultRule | undefined => {
    const isWatch = url.searchParams.get('watch') === 'true';
    for (const entry of rules) {
      const { rule } = entry;
      if (entry.left <= 0) continue;
      if (rule.method && rule.method !== req.method) continue;
      if (rule.path && !rule.path.test(url.pathname)) continue;
      if (rule.watch !== undefined && rule.watch !== isWatch) continue;
      entry.left -= 1;
      return rule;
    }
    return undefined;
  };

  const forward = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer, record: ProxiedRequest): void => {
    const headers = { ...req.headers, host: upstream.host };
    const out = https.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers, agent }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      if (record.query.get('watch') === 'true') {
        res.flushHeaders(); // as the API server does: a quiet watch has its headers at once
        let pending = '';
        up.on('data', (chunk: Buffer) => {
          const lines = (pending + chunk.toString('utf8')).split('\n');
          pending = lines.pop() ?? '';
          record.lines.push(...lines.filter((l) => l.trim()));
        });
      }
      up.pipe(res);
    });
    out.on('error', () => res.destroy());
    res.on('close', () => out.destroy());
    out.end(body);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://proxy');
      const rule = match(req, url);
      const action = rule?.action;
      const record: ProxiedRequest = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        accept: req.headers.accept ?? '',
        handled: action ? Object.keys(action)[0]! : 'forwarded',
        aborted: false,
        lines: [],
      };
      requests.push(record);
      open.add(res);
      res.on('close', () => {
        open.delete(res);
        if (!res.writableEnded) record.aborted = true;
      });
      const body = Buffer.concat(chunks);
      if (!action) return forward(req, res, body, record);
      if ('respond' in action) {
        const status = action.body ?? {
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          code: action.respond,
          reason: action.reason ?? 'InternalError',
          message: action.message ?? 'injected by the test proxy',
        };
        res.writeHead(action.respond, { 'content-type': 'application/json' });
        res.end(JSON.stringify(status));
      } else if ('events' in action) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(action.events.map((e) => `${JSON.stringify(e)}\n`).join(''));
      } else if ('hold' in action) {
        void action.hold().then(() => {
          if (!res.destroyed) forward(req, res, body, record);
        });
      } else if ('stall' in action) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.flushHeaders();
      }
      // hang: nothing at all.
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    requests,
    inject(rule) {
      const entry = { rule, left: rule.times ?? Number.POSITIVE_INFINITY };
      rules.unshift(entry);
      return () => {
        const at = rules.indexOf(entry);
        if (at >= 0) rules.splice(at, 1);
      };
    },
    kubeConfig(identity = cp.admin) {
      if (!identity.token) throw new Error(`the fault proxy forwards bearer tokens only; ${identity.user} has none (use the admin or a ServiceAccount)`);
      const kc = new KubeConfig();
      kc.loadFromOptions({
        // Plain HTTP on loopback: nothing to verify (KubeConfig refuses http:// otherwise).
        clusters: [{ name: 'proxy', server: url, skipTLSVerify: true }],
        users: [{ name: identity.user, token: identity.token }],
        contexts: [{ name: 'proxy', cluster: 'proxy', user: identity.user }],
        currentContext: 'proxy',
      });
      return kc;
    },
    async close() {
      for (const res of open) res.destroy();
      agent.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
