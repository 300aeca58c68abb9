/**
 * The project as today's scaffold generates it from its operless.json: `operless init`, then
 * `create api` for each kind in the order operless.json lists them, then `create webhook` for
 * each kind that has webhooks — replayed in memory. This is both what `operless upgrade` merges
 * in ("theirs") and what every scaffold command records as the pristine copy (record.ts), so
 * the two are always comparable: they differ only where the templates changed.
 *
 * Guarantees: pure and deterministic. Not rendered: the CRDs (`infra/crds/`: the project
 * renders them from its own types with `operless crd`). `derived` names the files regenerated
 * as a whole from operless.json (never merged: operless.json, the forwarder watches — keeping
 * the queue URLs set in `watches` — the forwarder RBAC, the webhook values).
 */
import { planContents, type FileChange } from '../files.ts';
import { PROJECT_FILE, renderProjectFile, type ApiEntry, type ProjectFile } from '../project-file.ts';
import { planInit } from '../init/plan.ts';
import { apiChanges } from '../api/plan.ts';
import { webhookChanges, WEBHOOKS_FUNCTION_FILE } from '../webhook/plan.ts';

export interface RenderInputs {
  /** The `operless` dependency of package.json. */
  readonly operlessDependency: string;
  /** The dev tool pins of package.json, by package. */
  readonly toolVersions: Readonly<Record<string, string>>;
  /** The project's infra/forwarder/watches.yaml as it is (its queue URLs are kept). */
  readonly watches?: string;
  /**
   * The order the project's kinds and webhooks were added in (record.ts keeps it), so the
   * entries inserted at the markers come out where the commands put them. Steps it lacks
   * follow in operless.json's order, each kind's webhooks after all kinds.
   */
  readonly steps?: readonly Step[];
}

/** One scaffold command after init: `create api` of a kind, or `create webhook` of one. */
export type Step = { readonly api: string } | { readonly webhook: string };

/** `steps` completed for `project`: the recorded ones it still has, then the missing ones. */
export function stepsOf(project: ProjectFile, recorded: readonly Step[] = []): Step[] {
  const wanted: Step[] = [...project.apis.map((a) => ({ api: a.kind })), ...project.apis.filter((a) => a.webhook).map((a) => ({ webhook: a.kind }))];
  const key = (step: Step) => ('api' in step ? `api:${step.api}` : `webhook:${step.webhook}`);
  const wantedKeys = new Set(wanted.map(key));
  const seen = new Set<string>();
  const steps: Step[] = [];
  for (const step of [...recorded, ...wanted]) {
    const k = key(step);
    if (!wantedKeys.has(k) || seen.has(k)) continue;
    seen.add(k);
    steps.push(step);
  }
  // A kind's webhooks come after the kind: a webhook step recorded before it moves to the end.
  const apiAt = (kind: string) => steps.findIndex((t) => 'api' in t && t.api === kind);
  const early = steps.filter((s, i) => 'webhook' in s && apiAt(s.webhook) > i);
  return [...steps.filter((s) => !early.includes(s)), ...early];
}

export interface RenderedProject {
  /** Every generated file but the CRDs, by path. */
  readonly files: ReadonlyMap<string, string>;
  /** The paths regenerated as a whole from operless.json. */
  readonly derived: ReadonlySet<string>;
}

/** Paths the replay leaves out: generated from the project's own schemas, not from templates. */
export function isRenderedElsewhere(path: string): boolean {
  return path.startsWith('infra/crds/');
}

export function renderProject(project: ProjectFile, inputs: RenderInputs): RenderedProject {
  const tree = new Map<string, string>();
  const derived = new Set<string>([PROJECT_FILE]);
  const apply = (changes: readonly FileChange[]) => {
    for (const change of changes) if (change.type === 'generated') derived.add(change.path);
    for (const [path, content] of planContents(changes, (p) => tree.get(p))) tree.set(path, content);
  };
  apply(
    planInit({
      name: project.name,
      domain: project.domain,
      operlessDependency: inputs.operlessDependency,
      toolVersions: inputs.toolVersions,
      ...(project.namespaces ? { namespaces: project.namespaces } : {}),
    }),
  );
  const bare: ApiEntry[] = project.apis.map(({ webhook: _webhook, ...api }) => api);
  const added: ApiEntry[] = [];
  for (const step of stepsOf(project, inputs.steps)) {
    if ('api' in step) {
      const api = bare.find((a) => a.kind === step.api);
      if (!api) continue;
      added.push(api);
      apply(apiChanges({ ...project, apis: [...added] }, api, { firstTime: true, ...(inputs.watches !== undefined ? { watches: inputs.watches } : {}) }));
    } else {
      const api = project.apis.find((a) => a.kind === step.webhook);
      if (!api?.webhook) continue;
      const webhooksFunction = tree.get(WEBHOOKS_FUNCTION_FILE);
      const resources = tree.get('src/resources.ts');
      apply(
        webhookChanges(project, api, api.webhook, {
          ...(webhooksFunction !== undefined ? { webhooksFunction } : {}),
          ...(resources !== undefined ? { resources } : {}),
        }),
      );
    }
  }
  tree.set(PROJECT_FILE, renderProjectFile(project));
  for (const path of [...tree.keys()]) if (isRenderedElsewhere(path)) tree.delete(path);
  return { files: tree, derived };
}
