/**
 * The dev loop's cluster: a local control plane of its own (etcd, kube-apiserver,
 * kube-controller-manager from src/testing, its kubeconfig copied into `.operless/`), or a
 * context of the user's kubeconfig; and the files the loop applies into it (CRDs, samples).
 *
 * Guarantees:
 * - A context that the kubeconfig does not have fails naming the contexts it has.
 * - `.operless/kubeconfig` is written with mode 0600 either way, so kubectl and
 *   `operless status` in another terminal reach the same cluster.
 * - A sample of a kind no controller reconciles, owns or watches is refused naming its file;
 *   applying is server-side apply (re-running the loop updates, never duplicates).
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { parseAllDocuments } from 'yaml';
import type { BoundKubeClient } from '../kube/client.ts';
import { CUSTOMRESOURCEDEFINITIONS } from '../kube/kinds.ts';
import type { KindRef, KubeObject } from '../kube/types.ts';
import type { ProjectLayout } from './project.ts';
import type { Stoppable } from './started-parts.ts';

/** What choosing the cluster reads of the loop's options. */
export interface ClusterChoice {
  /** Use this context of the kubeconfig (`kubeconfigPath` or KUBECONFIG) instead of a local control plane. */
  readonly context?: string;
  readonly kubeconfigPath?: string;
  /** Run the kube-controller-manager's workload controllers (default true). */
  readonly simulateWorkloads?: boolean;
}

export interface DevCluster {
  readonly kubeconfigPath: string;
  readonly kubeConfig: KubeConfig;
  /** True when the loop started its own control plane (no `--context`). */
  readonly local: boolean;
}

/** A local control plane (its kubeconfig copied into `.operless/`), or the chosen context of a kubeconfig. */
export async function startCluster(
  options: ClusterChoice,
  layout: ProjectLayout,
  stateDir: string,
  started: Stoppable[],
  say: (line: string) => void,
): Promise<DevCluster> {
  const kubeconfigPath = join(stateDir, 'kubeconfig');
  if (options.context === undefined) {
    say('starting a local control plane: etcd, kube-apiserver, kube-controller-manager (first run builds them from Go modules)');
    const { startControlPlane, WORKLOAD_CONTROLLERS } = await import('../testing/index.ts');
    const t0 = Date.now();
    const plane = await startControlPlane({
      controllers: options.simulateWorkloads === false ? true : WORKLOAD_CONTROLLERS,
      crds: layout.crds,
    });
    started.push({ name: 'control plane', stop: () => plane.stop() });
    copyFileSync(plane.kubeconfigPath, kubeconfigPath);
    say(`control plane ready in ${((Date.now() - t0) / 1000).toFixed(1)} s at ${plane.server}`);
    return { kubeconfigPath, kubeConfig: plane.kubeConfig, local: true };
  }
  const kubeConfig = new KubeConfig();
  if (options.kubeconfigPath) kubeConfig.loadFromFile(options.kubeconfigPath);
  else kubeConfig.loadFromDefault();
  if (!kubeConfig.getContextObject(options.context)) {
    throw new Error(
      `kubeconfig has no context "${options.context}" (contexts: ${
        kubeConfig
          .getContexts()
          .map((c) => c.name)
          .join(', ') || 'none'
      })`,
    );
  }
  kubeConfig.setCurrentContext(options.context);
  writeFileSync(kubeconfigPath, kubeConfig.exportConfig(), { mode: 0o600 });
  say(`using context "${options.context}" (${kubeConfig.getCurrentCluster()?.server})`);
  return { kubeconfigPath, kubeConfig, local: false };
}

/** Server-side applies every document of the given YAML files. */
export async function applyFiles(
  client: BoundKubeClient,
  files: readonly string[],
  kinds: readonly KindRef[],
  say: (line: string) => void,
  root: string,
): Promise<void> {
  for (const file of files) {
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      const object = doc.toJS() as KubeObject | null;
      if (!object?.kind) continue;
      const kind = kindOf(object, kinds, relative(root, file));
      if (kind.namespaced && !object.metadata.namespace) object.metadata.namespace = 'default';
      await client.apply(kind, object);
      say(`applied ${object.kind} ${object.metadata.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata.name} from ${relative(root, file)}`);
    }
  }
}

/** REST coordinates of what the loop applies from files: CRDs, and samples of the kinds the controllers know. */
function kindOf(object: KubeObject, kinds: readonly KindRef[], file: string): KindRef {
  if (object.kind === 'CustomResourceDefinition') return CUSTOMRESOURCEDEFINITIONS;
  const found = kinds.find((k) => k.kind === object.kind && k.apiVersion === object.apiVersion);
  if (!found) {
    throw new Error(
      `${file}: ${object.apiVersion} ${object.kind} is not a kind any controller reconciles, owns or watches; samples must be of the project's kinds`,
    );
  }
  return found;
}
