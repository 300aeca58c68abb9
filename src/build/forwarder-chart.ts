/**
 * The forwarder's Helm chart, driven from TypeScript: render it with `helm template`
 * (the pinned helm from the test environment's Go modules), and write the plain
 * manifests for users without Helm.
 *
 *   node src/build/forwarder-chart.ts render     regenerate infra/forwarder/manifests/
 *
 * Guarantees: rendering is deterministic for given values (the tests compare the checked-in
 * manifests with a fresh render); `helm` failures surface with helm's own message.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const CHART_DIR = join(root, 'infra/forwarder/chart');
export const EXAMPLE_VALUES = join(root, 'infra/forwarder/example-values.yaml');
/** chart-testing's values files (`ct lint` / `ct install` use each). */
export const CI_VALUES_DIR = join(CHART_DIR, 'ci');
export const MANIFESTS_PATH = join(root, 'infra/forwarder/manifests/operless-forwarder.yaml');
/** The Kubernetes version `helm template` assumes (it has no cluster to ask). */
export const KUBE_VERSION = '1.34.4';

export interface HelmResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs helm; never throws for a non-zero exit. */
export function runHelm(helm: string, args: readonly string[]): Promise<HelmResult> {
  return new Promise((resolvePromise) => {
    execFile(
      helm,
      [...args],
      {
        maxBuffer: 32 * 1024 * 1024,
        env: { ...process.env, HELM_CACHE_HOME: join(tmpdir(), 'operless-helm-cache'), HELM_CONFIG_HOME: join(tmpdir(), 'operless-helm-config') },
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
        resolvePromise({ code, stdout, stderr });
      },
    );
  });
}

/**
 * `helm template` of the chart with values files and/or an inline values object, for
 * Kubernetes `kubeVersion` (default `KUBE_VERSION`; null: no --kube-version, as users often run it).
 */
export async function renderChart(
  helm: string,
  options: { release?: string; namespace?: string; valuesFiles?: readonly string[]; values?: object; kubeVersion?: string | null } = {},
): Promise<HelmResult> {
  const dir = options.values ? mkdtempSync(join(tmpdir(), 'operless-values-')) : undefined;
  try {
    const files = [...(options.valuesFiles ?? [])];
    if (dir && options.values) {
      const path = join(dir, 'values.yaml');
      writeFileSync(path, stringify(options.values));
      files.push(path);
    }
    return await runHelm(helm, [
      'template',
      options.release ?? 'operless-forwarder',
      CHART_DIR,
      '--namespace',
      options.namespace ?? 'operless',
      ...(options.kubeVersion === null ? [] : ['--kube-version', options.kubeVersion ?? KUBE_VERSION]),
      ...files.flatMap((f) => ['--values', f]),
    ]);
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

/** The plain manifests: a Namespace plus the chart rendered with the example values. */
export async function renderPlainManifests(helm: string): Promise<string> {
  const result = await renderChart(helm, { valuesFiles: [EXAMPLE_VALUES] });
  if (result.code !== 0) throw new Error(`helm template failed:\n${result.stderr}`);
  return [
    '# The Operless forwarder as plain manifests, rendered from infra/forwarder/chart with',
    '# infra/forwarder/example-values.yaml (node src/build/forwarder-chart.ts render). Edit clusterId,',
    '# the queue URL, the watches and the IAM role annotation before applying:',
    '#   kubectl apply -f infra/forwarder/manifests/operless-forwarder.yaml',
    '---',
    'apiVersion: v1',
    'kind: Namespace',
    'metadata:',
    '  name: operless',
    '  labels:',
    '    pod-security.kubernetes.io/enforce: restricted',
    result.stdout.trimEnd(),
    '',
  ].join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { provision } = await import('../testing/provision.ts');
  const { helm } = await provision({ targets: ['helm'] });
  if (!helm) throw new Error('provision() did not return a helm binary');
  if (process.argv[2] !== 'render') {
    process.stderr.write('usage: node src/build/forwarder-chart.ts render\n');
    process.exit(2);
  }
  writeFileSync(MANIFESTS_PATH, await renderPlainManifests(helm));
  process.stderr.write(`wrote ${MANIFESTS_PATH}\n`);
}
