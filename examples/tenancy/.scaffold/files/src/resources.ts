/**
 * The custom resources of this project: `operless crd` renders each into
 * infra/crds/<plural>.<group>.yaml. `operless create api` adds entries below.
 */
import type { GeneratedResource } from 'operless/crd';
import { TenantResource } from './tenant/types.ts';
// +operless:scaffold:resource-imports

export const resources: GeneratedResource[] = [
  { definition: TenantResource, source: 'src/tenant/types.ts' },
  // +operless:scaffold:resources
];
