/**
 * The Tenant resource (tenancy.example.com/v1alpha1, cluster-scoped): its spec and status
 * schemas, from which come both the TypeScript type and the CRD (`operless crd` writes
 * infra/crds/tenants.tenancy.example.com.yaml). Describe the desired state in the spec; the
 * controller reports what it observed in the status.
 */
import { conditions, defineResource, integer, object, required, string, type Infer, type ResourceOf } from 'operless/crd';

export const tenantSpec = required(object(
  {
    // TODO: the desired state of a Tenant. Fields: string, integer, boolean, oneOf, array, map,
    // object, quantity, resourceRequirements; required(...) or a default makes a field present.
    message: string({ maxLength: 256, description: 'An example field: replace it with the desired state of your kind.' }),
  },
  { description: 'Desired state of the Tenant.' },
));

export const tenantStatus = object(
  {
    observedGeneration: integer({ format: 'int64', minimum: 0, description: 'The .metadata.generation this status was computed from.' }),
    conditions: conditions({ description: 'Ready (and any others), as metav1.Condition.' }),
  },
  { description: 'Observed state of the Tenant.' },
);

export type TenantSpec = Infer<typeof tenantSpec>;
export type TenantStatus = Infer<typeof tenantStatus>;

export const TenantResource = defineResource({
  group: 'tenancy.example.com',
  version: 'v1alpha1',
  kind: 'Tenant',
  plural: 'tenants',
  scope: 'Cluster',
  description: 'Tenant is the Schema for the tenants API.',
  spec: tenantSpec,
  status: tenantStatus,
  printerColumns: [
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
});

export type Tenant = ResourceOf<typeof TenantResource>;

/** How controllers and clients address Tenant objects. */
export const TENANT = TenantResource.kindRef;
