/**
 * Template of `src/<kind>/<spoke>.ts`: the spoke version of a kind with a conversion webhook,
 * starting with the hub's schema, and the name of its resource constant. Pure.
 */
import { camel } from '../../names.ts';
import type { ApiEntry } from '../../project-file.ts';

export function spokeResource(kind: string, version: string): string {
  return `${kind}${version.charAt(0).toUpperCase()}${version.slice(1)}Resource`;
}

export function spokeModule(api: ApiEntry, spoke: string): string {
  const k = api.kind;
  return `/**
 * ${k} ${api.group}/${spoke}: a second version of the kind, converted to and from ${api.version} (the hub,
 * the storage version) by the conversion webhook in webhook.ts. It starts with the hub's schema:
 * change its spec here and the conversion there together. src/resources.ts lists it as not
 * served, so a plain install needs no webhook; the chart serves it with the conversion stanza.
 */
import { defineResource } from 'operless/crd';
import { ${camel(k)}Spec, ${camel(k)}Status } from './types.ts';

export const ${spokeResource(k, spoke)} = defineResource({
  group: '${api.group}',
  version: '${spoke}',
  kind: '${k}',
  plural: '${api.plural}',
  scope: '${api.namespaced ? 'Namespaced' : 'Cluster'}',
  description: '${k} is the Schema for the ${api.plural} API (${spoke}).',
  spec: ${camel(k)}Spec,
  status: ${camel(k)}Status,
});
`;
}
