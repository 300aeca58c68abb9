/**
 * The kinds an Operless project reconciles, read from its generated CRDs
 * (`infra/crds/*.yaml`), and the names a user may type for them — like kubectl:
 * `Memcached`, `memcached`, `memcacheds`, `mc`, or `memcacheds.cache.example.com`.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KindRef } from '../kube/types.ts';
import { UsageError } from './args.ts';

export interface ProjectKind extends KindRef {
  readonly group: string;
  readonly names: readonly string[];
}

interface CrdDocument {
  kind?: string;
  spec?: {
    group?: string;
    scope?: string;
    names?: { kind?: string; plural?: string; singular?: string; shortNames?: string[] };
    versions?: { name?: string; served?: boolean; storage?: boolean }[];
  };
}

export function loadProjectKinds(dir = resolve(process.cwd(), 'infra', 'crds')): ProjectKind[] {
  if (!existsSync(dir)) return [];
  const kinds: ProjectKind[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
      const crd = doc.toJS() as CrdDocument | null;
      if (crd?.kind !== 'CustomResourceDefinition' || !crd.spec?.names?.kind || !crd.spec.names.plural || !crd.spec.group) continue;
      const version = crd.spec.versions?.find((v) => v.storage)?.name ?? crd.spec.versions?.[0]?.name;
      if (!version) continue;
      const { kind, plural, singular, shortNames = [] } = crd.spec.names;
      kinds.push({
        apiVersion: `${crd.spec.group}/${version}`,
        kind,
        plural,
        namespaced: crd.spec.scope !== 'Cluster',
        group: crd.spec.group,
        names: [kind.toLowerCase(), plural, singular ?? kind.toLowerCase(), `${plural}.${crd.spec.group}`, ...shortNames],
      });
    }
  }
  return kinds;
}

export function resolveKind(kinds: readonly ProjectKind[], typed: string): ProjectKind {
  const wanted = typed.toLowerCase();
  const match = kinds.find((k) => k.names.includes(wanted));
  if (match) return match;
  const known = kinds.map((k) => `${k.kind} (${k.names.slice(1).join(', ')})`).join('; ');
  throw new UsageError(
    kinds.length === 0
      ? `unknown kind "${typed}": no CRDs found in infra/crds/ (run \`operless crd\` in your project first)`
      : `unknown kind "${typed}"; this project reconciles: ${known}`,
  );
}

/** Parses `<kind>/<namespace>/<name>` (namespaced) or `<kind>/<name>` (cluster-scoped). */
export function parseObjectArg(kinds: readonly ProjectKind[], arg: string): { kind: ProjectKind; namespace?: string; name: string } {
  const parts = arg.split('/');
  const kind = resolveKind(kinds, parts[0] ?? '');
  if (kind.namespaced) {
    if (parts.length !== 3 || !parts[1] || !parts[2]) {
      throw new UsageError(`"${arg}": ${kind.kind} is namespaced; write ${parts[0]}/<namespace>/<name>`);
    }
    return { kind, namespace: parts[1], name: parts[2] };
  }
  if (parts.length !== 2 || !parts[1]) {
    throw new UsageError(`"${arg}": ${kind.kind} is cluster-scoped; write ${parts[0]}/<name>`);
  }
  return { kind, name: parts[1] };
}
