/**
 * Template of `infra/crds/<plural>.<group>.yaml`: the fresh kind's CRD, rendered from the very
 * resource its types.ts defines (templates/types.ts), as `operless crd` would render it. Pure.
 */
import { renderCrd } from '../../../crd/generate.ts';
import { kebab } from '../../names.ts';
import type { ApiEntry } from '../../project-file.ts';
import { kindResource } from './types.ts';

export function crdYaml(api: ApiEntry): string {
  return renderCrd({ definition: kindResource(api), source: `src/${kebab(api.kind)}/types.ts` });
}
