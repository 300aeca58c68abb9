/**
 * The reverse index of related objects: from a related object (a ConfigMap, a Secret) to the
 * primaries that refer to it, built from the primaries the forwarder already watches — no API
 * request and no function invocation per related change.
 *
 * It holds, per primary it has seen: kind, namespace, name, uid, and the values of the spec
 * fields that `field` mappings read (the snapshot's `refs`) — never the object. Lookups:
 * - `{ field }`: the primaries of the related object's namespace whose field names it;
 * - `{ label }`: the primary (same namespace) that the related object's label value names;
 * - `{ namespace: true }`: every primary of the related object's namespace.
 *
 * Guarantees: after any sequence of `apply` and `replace`, `primariesFor` returns exactly what a
 * scan of the live primaries would (the property test checks it against a brute-force scan);
 * a lookup never crosses namespaces; the index is fed by the primary streams' own events and
 * lists, so it is as current as the forwarder's view of the primaries. A related change seen
 * before a primary is indexed is not lost: that primary's own ADDED (or the start's Resync)
 * reconciles it, and a primary whose reference changes is reconciled by its own spec change.
 */
import type { RelatedMapping } from '../../contract/related.ts';
import { apiGroup } from '../../kube/paths.ts';
import type { ObjectSnapshot } from '../source/snapshot.ts';
import type { Change } from '../source/store.ts';

/** One indexed primary. */
export interface IndexedPrimary {
  readonly uid: string;
  readonly name: string;
  readonly namespace: string;
}

interface Entry extends IndexedPrimary {
  readonly kind: string;
  readonly stream: string;
  readonly refs: Readonly<Record<string, string>>;
}

/** The key in `refs` under which a related object's snapshot keeps the value of label `key`. */
export const labelRef = (key: string): string => `label:${key}`; // the form withRelatedFields declares

/** A primary kind, matched by group and kind (any version), as owner references are. */
export const primaryKindKey = (ref: { apiVersion: string; kind: string }): string => `${apiGroup(ref.apiVersion)}/${ref.kind}`;

const SEP = '\u0000';

export class RelatedIndex {
  readonly #byUid = new Map<string, Entry>();
  /** `kind ns` → uids. */
  readonly #byNamespace = new Map<string, Set<string>>();
  /** `kind ns name` → uids (two while an object is deleted and recreated). */
  readonly #byName = new Map<string, Set<string>>();
  /** `kind path ns value` → uids. */
  readonly #byRef = new Map<string, Set<string>>();

  get size(): number {
    return this.#byUid.size;
  }

  /** One change of a primary of `kind` seen on `stream`. */
  apply(kind: string, stream: string, change: Change): void {
    this.#remove(change.current.uid);
    if (change.type !== 'DELETED') this.#put(kind, stream, change.current);
  }

  /** A complete list of `stream`: what it held before is replaced by `listed`. */
  replace(kind: string, stream: string, listed: readonly ObjectSnapshot[]): void {
    for (const [uid, entry] of this.#byUid) if (entry.stream === stream) this.#remove(uid);
    for (const s of listed) {
      this.#remove(s.uid);
      this.#put(kind, stream, s);
    }
  }

  /** The primaries of `kind` that `map` names for the related object `related` (in its namespace). */
  primariesFor(kind: string, map: RelatedMapping, related: Pick<ObjectSnapshot, 'name' | 'namespace' | 'refs'>): IndexedPrimary[] {
    const ns = related.namespace;
    if (!ns) return [];
    let uids: Set<string> | undefined;
    if ('field' in map) uids = this.#byRef.get([kind, map.field, ns, related.name].join(SEP));
    else if ('label' in map) {
      const name = related.refs?.[labelRef(map.label)];
      uids = name === undefined ? undefined : this.#byName.get([kind, ns, name].join(SEP));
    } else uids = this.#byNamespace.get([kind, ns].join(SEP));
    return [...(uids ?? [])].flatMap((uid) => {
      const e = this.#byUid.get(uid);
      return e ? [{ uid: e.uid, name: e.name, namespace: e.namespace }] : [];
    });
  }

  #put(kind: string, stream: string, s: ObjectSnapshot): void {
    if (!s.namespace) return; // related mappings name namespaced primaries only
    const entry: Entry = { kind, stream, uid: s.uid, name: s.name, namespace: s.namespace, refs: s.refs ?? {} };
    this.#byUid.set(s.uid, entry);
    for (const key of keysOf(entry)) {
      let set = this.#setsFor(key).get(key.id);
      if (!set) this.#setsFor(key).set(key.id, (set = new Set()));
      set.add(s.uid);
    }
  }

  #remove(uid: string): void {
    const entry = this.#byUid.get(uid);
    if (!entry) return;
    this.#byUid.delete(uid);
    for (const key of keysOf(entry)) {
      const sets = this.#setsFor(key);
      const set = sets.get(key.id);
      set?.delete(uid);
      if (set?.size === 0) sets.delete(key.id);
    }
  }

  #setsFor(key: { map: 'namespace' | 'name' | 'ref' }): Map<string, Set<string>> {
    return key.map === 'namespace' ? this.#byNamespace : key.map === 'name' ? this.#byName : this.#byRef;
  }
}

function keysOf(e: Entry): { map: 'namespace' | 'name' | 'ref'; id: string }[] {
  return [
    { map: 'namespace', id: [e.kind, e.namespace].join(SEP) },
    { map: 'name', id: [e.kind, e.namespace, e.name].join(SEP) },
    ...Object.entries(e.refs).map(([path, value]) => ({ map: 'ref' as const, id: [e.kind, path, e.namespace, value].join(SEP) })),
  ];
}
