/**
 * A loopback TCP proxy for blackhole tests: in front of any TCP server (the kube-apiserver's
 * TLS port, ElasticMQ, a test server), it passes traffic through, resets connections, or
 * accepts and stalls — the fault a firewall that drops packets, a dead NAT entry or a hung
 * peer makes, which a reset-only proxy cannot.
 *
 * Modes (`setMode`; each says what it does to connections already open):
 * - `pass`: bytes are forwarded both ways. Connections stalled earlier stay stalled (a dead
 *   flow does not come back; the client has to give up on it and reconnect).
 * - `reset`: a new connection is reset at once; open connections are reset too.
 * - `stall`: a new connection is accepted and never answered (what it sends is read and
 *   discarded, nothing is written back, it is never closed); open connections stop forwarding
 *   in both directions and stay open — a blackhole of established flows.
 * - `{ stallAfterResponseBytes: n }`: connections (new and open ones, counting from now) pass
 *   until the server has sent `n` more bytes back on them, then stall as above.
 * - `stall-after-headers`: connections (new and open ones) pass until the server's bytes on
 *   them contain the end of an HTTP header block (`\r\n\r\n`), then stall: the response
 *   headers arrive, the body never does (plain HTTP only — a TLS stream's headers cannot be seen).
 *
 * Guarantees: loopback only, on a free port; `close()` destroys every connection it holds
 * (stalled ones included), so no socket outlives a test. No timing of its own: it never
 * delays, it only forwards, drops or resets.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export type StallMode = 'pass' | 'reset' | 'stall' | 'stall-after-headers' | { readonly stallAfterResponseBytes: number };

export interface StallProxy {
  /** The proxy's port on 127.0.0.1. */
  readonly port: number;
  /** `http://127.0.0.1:PORT` (or the given scheme): the endpoint to give clients. */
  url(scheme?: 'http' | 'https'): string;
  setMode(mode: StallMode): void;
  readonly mode: StallMode;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Connections currently stalled (accepted or cut, held open, never answered). */
  stalled(): number;
  close(): Promise<void>;
}

interface Connection {
  readonly client: net.Socket;
  upstream: net.Socket | undefined;
  stalled: boolean;
  /** The mode this connection forwards under (set at accept, changed by setMode). */
  mode: StallMode;
  /** What reached the client since `mode` was set. */
  forwarded: Forwarded;
}

const NOTHING: Forwarded = { bytes: 0, tail: Buffer.alloc(0) };

const HEADER_END = Buffer.from('\r\n\r\n');

/** What a connection has forwarded to its client so far: a byte count and its last 3 bytes. */
export interface Forwarded {
  readonly bytes: number;
  readonly tail: Buffer;
}

/**
 * How many bytes of `chunk` (from the server) may still reach the client before the
 * connection stalls under `mode`; undefined = all of them, and it goes on. Pure.
 */
export function forwardableBytes(mode: StallMode, forwarded: Forwarded, chunk: Buffer): number | undefined {
  if (typeof mode === 'object') {
    const left = mode.stallAfterResponseBytes - forwarded.bytes;
    return left >= chunk.length ? (left === chunk.length ? left : undefined) : Math.max(0, left);
  }
  if (mode !== 'stall-after-headers') return undefined;
  const at = Buffer.concat([forwarded.tail, chunk]).indexOf(HEADER_END);
  return at < 0 ? undefined : at + HEADER_END.length - forwarded.tail.length;
}

function advance(forwarded: Forwarded, data: Buffer): Forwarded {
  return { bytes: forwarded.bytes + data.length, tail: Buffer.concat([forwarded.tail, data]).subarray(-3) };
}

/** Starts a stall proxy to `target` (host and port of the real server), in `pass` mode unless told otherwise. */
export async function startStallProxy(target: { host: string; port: number }, initial: StallMode = 'pass'): Promise<StallProxy> {
  let mode: StallMode = initial;
  let accepted = 0;
  const open = new Set<Connection>();

  const stall = (conn: Connection): void => {
    conn.stalled = true;
    conn.upstream?.destroy();
    conn.upstream = undefined;
  };

  const server = net.createServer((client) => {
    accepted++;
    const conn: Connection = { client, upstream: undefined, stalled: false, mode, forwarded: NOTHING };
    open.add(conn);
    client.on('error', () => {});
    client.on('close', () => {
      conn.upstream?.destroy();
      open.delete(conn);
    });
    if (conn.mode === 'reset') {
      client.resetAndDestroy();
      return;
    }
    // A stalled connection reads (so the client's writes never block) and discards.
    client.on('data', (data: Buffer) => {
      if (!conn.stalled) conn.upstream?.write(data);
    });
    if (conn.mode === 'stall') {
      conn.stalled = true;
      return;
    }
    const upstream = net.connect(target.port, target.host);
    conn.upstream = upstream;
    upstream.on('error', () => {
      if (!conn.stalled) client.destroy();
    });
    upstream.on('close', () => {
      if (!conn.stalled) client.end();
    });
    upstream.on('data', (data: Buffer) => {
      if (conn.stalled) return;
      const allowed = forwardableBytes(conn.mode, conn.forwarded, data);
      const part = allowed === undefined ? data : data.subarray(0, allowed);
      if (part.length > 0) client.write(part);
      conn.forwarded = advance(conn.forwarded, part);
      if (allowed !== undefined) stall(conn);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (scheme = 'http') => `${scheme}://127.0.0.1:${port}`,
    get mode() {
      return mode;
    },
    get accepted() {
      return accepted;
    },
    stalled: () => [...open].filter((c) => c.stalled).length,
    setMode(next) {
      mode = next;
      for (const conn of open) {
        if (next === 'reset') conn.client.resetAndDestroy();
        else if (next === 'stall') stall(conn);
        else if (!conn.stalled) {
          conn.mode = next;
          conn.forwarded = NOTHING;
        }
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const conn of open) {
          conn.upstream?.destroy();
          conn.client.destroy();
        }
        server.close(() => resolve());
      }),
  };
}
