/**
 * Template of `src/resources.ts`: the resources `operless crd` renders; `create api` adds each
 * kind at its markers. Pure.
 */
import { marker } from '../../files.ts';

export const RESOURCES = `/**
 * The custom resources of this project: \`operless crd\` renders each into
 * infra/crds/<plural>.<group>.yaml. \`operless create api\` adds entries below.
 */
import type { GeneratedResource } from 'operless/crd';
// ${marker('resource-imports')}

export const resources: GeneratedResource[] = [
  // ${marker('resources')}
];
`;
