/**
 * The custom resources this repository ships, with the file that defines each — the same
 * convention as an Operless project's `src/resources.ts` (what `operless init` creates):
 * `operless crd` (`npm run crd`) renders each into infra/crds/, `operless crd --check` and a
 * unit test fail when a checked-in file is stale.
 *
 * It sits at the top of src/, beside the package entry index.ts: the CRD library (src/crd/)
 * knows no resource, the example operator (src/memcached/) knows the library, and this list
 * joins the two.
 */
import { fileURLToPath } from 'node:url';
import type { GeneratedResource } from './crd/index.ts';
import { MemcachedResource } from './memcached/types.ts';
import { MemcachedV1beta1Resource } from './memcached/v1beta1.ts';

/** Where this repository keeps its CRDs. */
export const CRD_DIR = fileURLToPath(new URL('../infra/crds', import.meta.url));

export const resources: readonly GeneratedResource[] = [
  // v1beta1 is listed but not served: a plain install (kubectl apply -f infra/crds/) needs no
  // conversion webhook; the chart serves it when it adds the conversion stanza.
  { definition: MemcachedResource, source: 'src/memcached/types.ts', unservedVersions: [MemcachedV1beta1Resource] },
];
