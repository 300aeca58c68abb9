/**
 * The webhook endpoint's serving certificate, reloaded when its files change — as cert-manager
 * renews it (`rotationPolicy: Always`, every ~60 days by default) and the CA injector swaps every
 * `caBundle`, so the endpoint must serve the new pair without a restart (controller-runtime's
 * certwatcher is the model).
 *
 * Guarantees:
 * - The files are watched two ways: their directories (kubelet updates a mounted Secret by
 *   swapping the `..data` symlink in the mount directory: one rename there) and a poll every
 *   `intervalMs` as a fallback for filesystems where watching says nothing. A change is read
 *   once both files are read; the same bytes as served change nothing.
 * - A new pair is applied only if it is a valid certificate and key that belong together (the
 *   TLS layer builds a context from them); otherwise the old pair keeps being served, the reason
 *   is logged (ERROR) and counted (`invalid`) once per distinct bad pair, and the next change
 *   is tried again. An unreadable file (mid-swap, removed) is the same: logged, counted
 *   (`unreadable`), the old pair served.
 * - Nothing here throws to its caller after start; `close()` stops watching and polling.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { errorMessage, type Logger } from '../../observability/log.ts';

export interface CertificatePair {
  readonly certPem: string;
  readonly keyPem: string;
}

export type ReloadResult = 'reloaded' | 'invalid' | 'unreadable';

export interface CertificateWatcherOptions {
  readonly certFile: string;
  readonly keyFile: string;
  /** The pair served now (read at start). */
  readonly current: CertificatePair;
  /** Serves a new, checked pair. */
  readonly apply: (pair: CertificatePair) => void;
  readonly log: Logger;
  readonly onResult?: (result: ReloadResult) => void;
  /** The fallback poll (default 10 s). */
  readonly intervalMs?: number;
}

/** Why a pair cannot be served, or undefined when the TLS layer accepts it. */
export function pairProblem(pair: CertificatePair): string | undefined {
  try {
    // The TLS layer takes an empty file as no certificate: refuse it, and say which file is wrong.
    const leaf = new X509Certificate(pair.certPem);
    const key = createPrivateKey(pair.keyPem);
    if (!leaf.checkPrivateKey(key)) return "the key is not the certificate's (key values mismatch)";
    createSecureContext({ cert: pair.certPem, key: pair.keyPem });
    return undefined;
  } catch (err) {
    return errorMessage(err);
  }
}

export function watchCertificate(options: CertificateWatcherOptions): { close(): void } {
  let served = options.current;
  /** The last bad pair reported, so a pair that stays bad is logged once. */
  let reported = '';
  let closed = false;
  let running: Promise<void> | undefined;
  let again = false;
  const check = async (): Promise<void> => {
    let pair: CertificatePair;
    try {
      const [certPem, keyPem] = await Promise.all([readFile(options.certFile, 'utf8'), readFile(options.keyFile, 'utf8')]);
      pair = { certPem, keyPem };
    } catch (err) {
      const why = `unreadable:${errorMessage(err)}`;
      if (why !== reported) {
        reported = why;
        options.log.error('cannot read the webhook serving certificate; still serving the previous one', {
          certFile: options.certFile,
          keyFile: options.keyFile,
          error: errorMessage(err),
        });
        options.onResult?.('unreadable');
      }
      return;
    }
    if (pair.certPem === served.certPem && pair.keyPem === served.keyPem) return;
    const problem = pairProblem(pair);
    if (problem !== undefined) {
      const why = `invalid:${pair.certPem}${pair.keyPem}`;
      if (why !== reported) {
        reported = why;
        options.log.error('the new webhook serving certificate and key cannot be served; still serving the previous pair', {
          certFile: options.certFile,
          keyFile: options.keyFile,
          problem,
        });
        options.onResult?.('invalid');
      }
      return;
    }
    options.apply(pair);
    served = pair;
    reported = '';
    options.log.info('webhook serving certificate reloaded', { certFile: options.certFile });
    options.onResult?.('reloaded');
  };
  /** One check at a time; a trigger during one runs one more after it. */
  const trigger = () => {
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    running = check()
      .catch((err: unknown) => {
        options.log.error('webhook certificate check failed', { error: errorMessage(err) });
      })
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          trigger();
        }
      });
  };
  const watchers: FSWatcher[] = [];
  for (const dir of new Set([dirname(options.certFile), dirname(options.keyFile)])) {
    try {
      const watcher = watch(dir, { persistent: false }, () => trigger());
      watcher.on('error', (err) => options.log.warn('cannot watch the webhook certificate directory; polling only', { dir, error: errorMessage(err) }));
      watchers.push(watcher);
    } catch (err) {
      options.log.warn('cannot watch the webhook certificate directory; polling only', { dir, error: errorMessage(err) });
    }
  }
  const poll = setInterval(trigger, options.intervalMs ?? 10_000);
  poll.unref();
  return {
    close: () => {
      closed = true;
      clearInterval(poll);
      for (const watcher of watchers) watcher.close();
    },
  };
}
