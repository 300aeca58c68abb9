/**
 * What a function accepts from a kubeconfig it did not ship with (given inline in an
 * environment variable, or fetched from SSM Parameter Store / Secrets Manager): whoever can
 * write that value must not be able to run code in the function, and the value's secrets must
 * not reach the logs.
 *
 * - An `exec` credential plugin (and an `auth-provider` with a `cmd-path`, which
 *   @kubernetes/client-node also runs) is refused unless `OPERLESS_KUBECONFIG_ALLOW_EXEC=true`;
 *   a kubeconfig file on disk is part of the deployment and is not checked.
 * - A field that names a local file the client would read and send or trust (`FILE_FIELDS`:
 *   `token-file`, `client-certificate`, `client-key`, `certificate-authority`, an auth-provider's
 *   `tokenFile` and `idp-certificate-authority`, in any user or cluster of the document) is
 *   refused unless `OPERLESS_KUBECONFIG_ALLOW_FILES=true`, with a message naming the field (never
 *   its value): whoever can write the value must not make the function read its own files and
 *   send them to a server of their choosing. The check runs on the document before the client
 *   loads it (the client reads `token-file` while loading), and the client then loads exactly
 *   the checked document (`checkedKubeconfig` hands it the parsed value as JSON), so no second
 *   YAML parser can read it differently.
 * - `insecure-skip-tls-verify` is accepted, with a warning on every client built from it.
 * - A kubeconfig that fails to load is described by where and why it failed, never by its
 *   content: the YAML parser's code frame and any message quoting the document are withheld.
 *
 * Pure decisions; factory.ts applies them.
 */
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';

/** The environment variable that allows exec credential plugins in an inline or SSM kubeconfig. */
export const ALLOW_EXEC_ENV = 'OPERLESS_KUBECONFIG_ALLOW_EXEC';

/** The environment variable that allows local file references in an inline or SSM kubeconfig. */
export const ALLOW_FILES_ENV = 'OPERLESS_KUBECONFIG_ALLOW_FILES';

/** Per list of the document, the entry's key and its fields that name a local file (client-node reads each). */
export const FILE_FIELDS = {
  clusters: { entry: 'cluster', fields: ['certificate-authority'], authProvider: [] },
  users: { entry: 'user', fields: ['token-file', 'client-certificate', 'client-key'], authProvider: ['tokenFile', 'idp-certificate-authority'] },
} as const;

/**
 * The paths (like `users[0].user.token-file`) of every field of a parsed kubeconfig that names a
 * local file, in document order. Pure; anything that is not a kubeconfig's shape yields none.
 */
export function fileReferences(doc: unknown): string[] {
  const found: string[] = [];
  for (const [list, { entry, fields, authProvider }] of Object.entries(FILE_FIELDS)) {
    const items = (doc as Record<string, unknown> | null)?.[list];
    if (!Array.isArray(items)) continue;
    items.forEach((item: unknown, i) => {
      const body = (item as Record<string, unknown> | null)?.[entry] as Record<string, unknown> | null | undefined;
      if (!body || typeof body !== 'object') return;
      for (const field of fields) if (present(body[field])) found.push(`${list}[${i}].${entry}.${field}`);
      const config = (body['auth-provider'] as { config?: Record<string, unknown> } | null | undefined)?.config;
      for (const field of authProvider)
        if (config && typeof config === 'object' && present(config[field])) found.push(`${list}[${i}].${entry}.auth-provider.config.${field}`);
    });
  }
  return found;
}

function present(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

/** The refusal of a kubeconfig from `origin` that names local files at `fields`. */
export function fileRefusal(origin: string, fields: readonly string[]): string {
  return (
    `the kubeconfig from ${origin} names a local file in ${fields.join(', ')}, which the function would read and send or trust; ` +
    `whoever can change that value could make it read any file here, so it is refused unless ${ALLOW_FILES_ENV}=true is set ` +
    '(give the contents instead: token, client-certificate-data, client-key-data, certificate-authority-data)'
  );
}

export function filesAllowed(env: Readonly<Record<string, string | undefined>>): boolean {
  return env[ALLOW_FILES_ENV] === 'true';
}

/** A refusal of a kubeconfig's content, said as is (it names fields, never values). */
export class KubeconfigRefused extends Error {
  override readonly name = 'KubeconfigRefused';
}

/**
 * The kubeconfig document from `origin` to load, as JSON: parsed (YAML 1.2, merge keys as the
 * client's parser has them, at most 100 aliases), its file references refused unless allowed
 * (`KubeconfigRefused`); a syntax error is the parser's (`describeLoadError` describes it).
 */
export async function checkedKubeconfig(document: string, origin: string, env: Readonly<Record<string, string | undefined>>): Promise<string> {
  const { parse } = await import('yaml');
  const parsed: unknown = parse(document, { merge: true });
  const files = filesAllowed(env) ? [] : fileReferences(parsed);
  if (files.length > 0) throw new KubeconfigRefused(fileRefusal(origin, files));
  return JSON.stringify(parsed ?? null);
}

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
  return (
    `the kubeconfig from ${origin} uses ${what}, which would run inside the function; ` +
    `whoever can change that value could run code here, so it is refused unless ${ALLOW_EXEC_ENV}=true is set ` +
    '(or use a token, client certificates, or OPERLESS_EKS_CLUSTER for EKS)'
  );
}

/**
 * A load error described without the kubeconfig's content: a YAML syntax error by its reason
 * and position; any other message only when it quotes nothing of the document.
 */
export function describeLoadError(err: unknown, kubeconfig: string | undefined): string {
  const e = err as {
    name?: unknown;
    reason?: unknown;
    mark?: { line?: unknown; column?: unknown };
    message?: unknown;
    code?: unknown;
    linePos?: { line?: unknown; col?: unknown }[];
  };
  if (e?.name === 'YAMLParseError') {
    const at = e.linePos?.[0];
    const where = typeof at?.line === 'number' ? ` at line ${at.line}, column ${Number(at.col)}` : '';
    return `not valid YAML${where}: ${typeof e.code === 'string' ? e.code : 'syntax error'}`;
  }
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
