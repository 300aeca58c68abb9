/**
 * Template of `test/<kind>.test.ts`: the kind's integration test against a real control plane —
 * the CRD installs, the sample applies, one reconcile as the function's own RBAC identity sets
 * Ready and asks for nothing more. Pure.
 */
import { camel, kebab } from '../../names.ts';
import type { ApiEntry, ProjectFile } from '../../project-file.ts';
import { groupName } from '../rbac.ts';
import { sampleNamespace } from './sample.ts';

export function integrationTest(projectFile: ProjectFile, api: ApiEntry): string {
  const project = projectFile.name;
  const namespace = sampleNamespace(projectFile);
  const k = api.kind;
  const file = kebab(k);
  const scope = projectFile.namespaces ?? [];
  return `/**
 * The ${k} controller against a real kube-apiserver + etcd (the Operless test environment,
 * binaries cached in ~/.cache/operless): the CRD installs, the sample applies, and one
 * reconcile of it — run by the Operless runtime under the function's own RBAC — sets the Ready
 * condition and asks for nothing more.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { reconcileTester, startControlPlane, type ControlPlane } from 'operless/testing';
import { ${camel(k)}Controller } from '../src/${file}/controller.ts';

let cp: ControlPlane;

before(async () => {
  cp = await startControlPlane({ crds: ['infra/crds/${api.plural}.${api.group}.yaml'] });
});
after(async () => {
  await cp?.stop();
});

test('reconciling the sample ${k}: Ready=True with observedGeneration, nothing requeued', async () => {
${scope.map((n) => `  await cp.kubectl(['create', 'namespace', '${n}']); // namespace-scoped mode: its Roles live there\n`).join('')}  for (const file of ['infra/rbac/${file}-function.yaml', 'infra/samples/${file}.yaml']) {
    const applied = await cp.kubectl(['apply', '-f', file]);
    assert.equal(applied.code, 0, applied.stderr);
  }
  // As the function: a user in the group its RBAC binds.
  const tester = await reconcileTester(cp, { user: '${file}-function', groups: ['${groupName(project, api)}'] });
  const run = await tester.reconcile(${camel(k)}Controller, { ${api.namespaced ? `namespace: '${namespace}', ` : ''}name: '${file}-sample' });
  assert.deepEqual(run.result, { type: 'done' }, run.logs.join('\\n'));
  assert.deepEqual(run.followUp, { type: 'none' }, 'nothing is requeued or dead-lettered');
  const ready = run.object?.status?.conditions?.find((c) => c.type === 'Ready');
  assert.equal(ready?.status, 'True', JSON.stringify(run.object?.status));
  assert.equal(ready?.observedGeneration, run.object?.metadata.generation);
  assert.equal(run.object?.status?.observedGeneration, run.object?.metadata.generation, 'status.observedGeneration is the generation reconciled');
});
`;
}
