/**
 * What a function accepts from a kubeconfig it did not ship with (given inline in an
 * environment variable, or fetched from SSM Parameter Store / Secrets Manager): whoever can
 * write that value must not be able to run code in the function, and the value's secrets must
 * not reach the logs.
 *
 * - An `exec` credential plugin (and an `auth-provider` with a `cmd-path`, which
 *   @kubernetes/client-node also runs) is refused unless `OPERLESS_KUBECONFIG_ALLOW_EXEC=true`;
 *   a kubeconfig file on disk is part of the deployment and is not checked.
 * - `insecure-skip-tls-verify` is accepted, with a warning on every client built from it.
 * - A kubeconfig that fails to load is described by where and why it failed, never by its
 *   content: the YAML parser's code frame and any message quoting the document are withheld.
 *
 * Pure decisions; factory.ts applies them.
 */
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';

/** The environment variable that allows exec credential plugins in an inline or SSM kubeconfig. */
export const ALLOW_EXEC_ENV = 'OPERLESS_KUBECONFIG_ALLOW_EXEC';

export function execAllowed(env: Readonly<Record<string, string | undefined>>): boolean {
  return env[ALLOW_EXEC_ENV] === 'true';
}

/**
 * Why the kubeconfig's current user would run a command, or undefined when it would not.
 * Only the command's name is said (never its arguments or environment, which may hold secrets).
 */
export function commandOfCurrentUser(kc: KubeConfig): string | undefined {
  const user = kc.getCurrentUser();
  if (!user) return undefined;
  const exec = user.exec as { command?: unknown } | undefined;
  if (exec) return `an exec credential plugin (command "${commandName(exec.command)}")`;
  const provider = user.authProvider as { config?: Record<string, unknown> } | undefined;
  const cmd = provider?.config?.['cmd-path'];
  if (cmd !== undefined) return `an auth-provider command (cmd-path "${commandName(cmd)}")`;
  return undefined;
}

function commandName(command: unknown): string {
  if (typeof command !== 'string' || command === '') return '?';
  return (command.split('/').pop() ?? command).slice(0, 64);
}

/** The refusal of a kubeconfig from `origin` whose user runs `what`. */
export function execRefusal(origin: string, what: string): string {
  return `the kubeconfig from ${origin} uses ${what}, which would run inside the function; `
    + `whoever can change that value could run code here, so it is refused unless ${ALLOW_EXEC_ENV}=true is set `
    + '(or use a token, client certificates, or OPERLESS_EKS_CLUSTER for EKS)';
}

/**
 * A load error described without the kubeconfig's content: a YAML syntax error by its reason
 * and position; any other message only when it quotes nothing of the document.
 */
export function describeLoadError(err: unknown, kubeconfig: string | undefined): string {
  const e = err as { name?: unknown; reason?: unknown; mark?: { line?: unknown; column?: unknown }; message?: unknown };
  if (e?.name === 'YAMLException') {
    const where = typeof e.mark?.line === 'number' ? ` at line ${e.mark.line + 1}, column ${Number(e.mark.column) + 1}` : '';
    return `not valid YAML${where}: ${typeof e.reason === 'string' ? e.reason : 'syntax error'}`;
  }
  const message = (typeof e?.message === 'string' ? e.message : String(err)).split('\n')[0] ?? '';
  if (kubeconfig !== undefined && quotesDocument(message, kubeconfig)) {
    return `${typeof e?.name === 'string' ? e.name : 'Error'} (its message quotes the kubeconfig and is withheld)`;
  }
  return message;
}

/**
 * Whether `message` contains a value of `doc`: any word of eight or more characters that is
 * not one of the document's keys (a message may name `clusters`, never a token). Pure.
 */
export function quotesDocument(message: string, doc: string): boolean {
  const keys = new Set([...doc.matchAll(/([\w.-]+)["']?\s*:/g)].map((m) => m[1]));
  for (const word of doc.split(/[\s,"'{}[\]]+/)) {
    const value = word.replace(/:$/, '');
    if (value.length >= 8 && !keys.has(value) && message.includes(value)) return true;
  }
  return false;
}
