/**
 * The custom resources this project ships, with the file that defines each. `writeCrds()`
 * and the staleness test render exactly this list into `infra/crds/`.
 */
import type { ResourceDefinition } from './resource.ts';
import { MemcachedResource } from '../memcached/types.ts';

export interface GeneratedResource {
  readonly definition: ResourceDefinition<unknown, unknown>;
  /** Repository path of the TypeScript definition (named in the generated file's header). */
  readonly source: string;
}

export const projectResources: readonly GeneratedResource[] = [
  { definition: MemcachedResource, source: 'src/memcached/types.ts' },
];
