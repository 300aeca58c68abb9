/**
 * Loopback TCP ports for the test environment's components.
 *
 * Guarantees: `freePorts(n)` returns n distinct ports that were free on 127.0.0.1 a moment
 * ago (the OS picked them; another process could still take one before the component binds,
 * which the component's start then reports as "port in use"). `closedPort()` is one such
 * port, for tests of "nothing listens there": unlike a fixed port (9, 1) it is known to have
 * been free on this machine a moment ago. `assertPortFree` says clearly which component's port
 * is taken and what to do.
 */
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { LOOPBACK } from './config.ts';

export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      ports.push(await listen(server, 0));
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}

/**
 * A loopback port that was free a moment ago and is closed now: connecting to it is refused
 * (unless another process binds it in between, which a test then sees as an unexpected answer).
 */
export async function closedPort(): Promise<number> {
  const [port] = await freePorts(1);
  if (port === undefined) throw new Error('the OS gave no free loopback port');
  return port;
}

export class PortInUseError extends Error {
  override readonly name = 'PortInUseError';
  readonly port: number;
  constructor(component: string, port: number) {
    super(
      `${component} cannot start: port ${LOOPBACK}:${port} is already in use by another process. ` +
        `Find it with \`ss -ltnp 'sport = :${port}'\` and stop it, or stop the test environment that still holds it ` +
        `(a restart reuses the port it had).`,
    );
    this.port = port;
  }
}

/** Throws PortInUseError when something listens on 127.0.0.1:port. */
export async function assertPortFree(component: string, port: number): Promise<void> {
  const server = createServer();
  try {
    await listen(server, port);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new PortInUseError(component, port);
    throw err;
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host: LOOPBACK, exclusive: true }, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}
