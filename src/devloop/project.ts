/**
 * The operator project the local loop runs: its reconcile functions (from `serverless.yml`:
 * every function with an `sqs` event), their controllers, CRDs and samples.
 *
 * A function module exports `handler` (what Lambda calls) and `controllers` — the same
 * controllers the handler serves — so the loop can derive the forwarder's watches from them
 * (each primary kind and every kind it `owns`), the way controller-runtime's builder does
 * with `For()` and `Owns()`.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseServerlessYaml } from '../project/serverless-yml.ts';
import type { Controller } from '../core/controller/controller.ts';
import type { KindRef, KubeObject } from '../kube/types.ts';
import type { ForwarderConfigInput, RelatedTargetInput } from '../forwarder/config/config.ts';

export interface FunctionEntry {
  /** The function's name in serverless.yml. */
  readonly name: string;
  /** Module path of the handler source, e.g. `functions/memcached.ts`. */
  readonly module: string;
  readonly exportName: string;
}

export interface ProjectLayout {
  readonly root: string;
  readonly functions: readonly FunctionEntry[];
  /** The webhook functions (no SQS event, a `toWebhookHandler` module): see webhooks.ts. */
  readonly webhookFunctions: readonly FunctionEntry[];
  readonly crds: readonly string[];
  readonly samples: readonly string[];
}

/** The reconcile functions (those with an SQS event) of a serverless.yml. */
export function reconcileFunctions(serverlessYaml: string): FunctionEntry[] {
  return parseServerlessYaml(serverlessYaml)
    .functions.filter((f) => f.sqs)
    .map(({ name, module, exportName }) => ({ name, module, exportName }));
}

/** The functions without an SQS event whose module calls `toWebhookHandler`: the webhook functions. */
export function webhookFunctionEntries(root: string, serverlessYaml: string): FunctionEntry[] {
  return parseServerlessYaml(serverlessYaml)
    .functions.filter((f) => !f.sqs && existsSync(resolve(root, f.module)) && readFileSync(resolve(root, f.module), 'utf8').includes('toWebhookHandler'))
    .map(({ name, module, exportName }) => ({ name, module, exportName }));
}

export function loadProjectLayout(root: string): ProjectLayout {
  const serverless = join(root, 'serverless.yml');
  if (!existsSync(serverless)) {
    throw new Error(`no serverless.yml in ${root}: run \`operless dev\` in an Operless project (or pass --project <dir>)`);
  }
  const serverlessYaml = readFileSync(serverless, 'utf8');
  const functions = reconcileFunctions(serverlessYaml);
  if (functions.length === 0) throw new Error('serverless.yml declares no function with an sqs event: nothing to run');
  const yamlFiles = (dir: string) =>
    existsSync(dir)
      ? readdirSync(dir)
          .filter((f) => /\.ya?ml$/.test(f))
          .sort()
          .map((f) => join(dir, f))
      : [];
  return {
    root,
    functions,
    webhookFunctions: webhookFunctionEntries(root, serverlessYaml),
    crds: yamlFiles(join(root, 'infra', 'crds')),
    samples: yamlFiles(join(root, 'infra', 'samples')),
  };
}

export interface LoadedFunction {
  readonly entry: FunctionEntry;
  readonly controllers: readonly Controller<KubeObject>[];
}

/** Imports a function module (after the environment it reads is set) and checks its exports. */
export async function importFunction(root: string, entry: FunctionEntry): Promise<LoadedFunction> {
  const path = resolve(root, entry.module);
  const mod = (await import(path)) as Record<string, unknown>;
  if (typeof mod[entry.exportName] !== 'function') {
    throw new Error(`${entry.module} does not export a function named "${entry.exportName}" (serverless.yml handler of "${entry.name}")`);
  }
  const controllers = mod.controllers;
  if (!Array.isArray(controllers) || controllers.length === 0) {
    throw new Error(`${entry.module} must also export \`controllers\` (the controllers its handler serves) so the local loop knows what to watch`);
  }
  return { entry, controllers: controllers as Controller<KubeObject>[] };
}

type Watches = Pick<ForwarderConfigInput, 'primaries' | 'owned' | 'related'>;

/** The forwarder watches for a set of controllers: each primary, each owned kind once, each related kind once (with every primary it maps to). */
export function watchesFor(controllers: readonly Controller<KubeObject>[]): Watches {
  return functionWatches([{ controllers }]);
}

/**
 * The forwarder watches for the project's functions: each function's primaries, routed to
 * that function's queue (`queueUrl`), each owned kind once (an owned object's message
 * follows its owner to the owner's queue), and each related kind once with every primary
 * that declared it and its mapping (a related message goes to that primary's queue); a
 * function's `bulkQueueUrl` becomes its primaries' (their resyncs and relists go there). Pure.
 */
export function functionWatches(
  functions: readonly { readonly controllers: readonly Controller<KubeObject>[]; readonly queueUrl?: string; readonly bulkQueueUrl?: string | undefined }[],
): Watches {
  const key = (k: KindRef) => `${k.apiVersion}/${k.kind}`;
  const owned = new Map<string, KindRef>();
  const related = new Map<string, { kind: KindRef; for: RelatedTargetInput[] }>();
  for (const f of functions) {
    for (const c of f.controllers) {
      for (const k of c.spec.owns ?? []) owned.set(key(k), k);
      for (const w of c.spec.watches ?? []) {
        const entry = related.get(key(w.kind)) ?? { kind: w.kind, for: [] };
        entry.for.push({ apiVersion: c.kind.apiVersion, kind: c.kind.kind, ...w.map });
        related.set(key(w.kind), entry);
      }
    }
  }
  const ref = (k: KindRef) => ({ apiVersion: k.apiVersion, kind: k.kind, plural: k.plural, namespaced: k.namespaced });
  return {
    primaries: functions.flatMap((f) =>
      f.controllers.map((c) => ({
        ...ref(c.kind),
        ...(f.queueUrl ? { queueUrl: f.queueUrl } : {}),
        ...(f.bulkQueueUrl ? { bulkQueueUrl: f.bulkQueueUrl } : {}),
      })),
    ),
    owned: [...owned.values()].map(ref),
    ...(related.size > 0 ? { related: [...related.values()].map((r) => ({ ...ref(r.kind), for: r.for })) } : {}),
  };
}
