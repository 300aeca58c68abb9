/**
 * `operless doctor`: checks that the pieces an operator needs are in place, one line each —
 * `✔` passed, `✘` failed (with the fix on the next line), `–` not applicable:
 *
 * - the cluster answers (`GET /version`) and who we are (`SelfSubjectReview`);
 * - each project CRD (infra/crds) is installed, Established and serves its version (read
 *   from the CRD, or from API discovery when the identity may not read CRDs);
 * - the identity has every permission the functions' RBAC (infra/rbac) grants them, one
 *   `SelfSubjectAccessReview` per verb — run it with the function's kubeconfig, or as the
 *   function with `--as <user> --as-group <group>` (impersonation);
 * - the work queue and the DLQ answer, and the queue's redrive policy points at the DLQ;
 * - with `OPERLESS_EKS_CLUSTER` set: an EKS token can be minted and the API server accepts it;
 * - offline, from the project's serverless.yml: each reconcile function's
 *   `OPERLESS_BUDGET_RESERVE_MS` is below its `timeout` (core/invocation/budget.ts `packagedReserveProblems`).
 *
 * Guarantees: changes nothing (reviews and GETs only); exit code 1 when any check failed.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { KubeTransport } from '../../kube/transport.ts';
import { isKubeApiError } from '../../kube/errors.ts';
import { errorMessage } from '../../observability/log.ts';
import { helpText, parseCommandArgs, UsageError, type CommandSpec } from '../args.ts';
import { IMPERSONATION_OPTIONS, connectCluster, impersonationFrom, type ClusterConnection, type Impersonation } from '../cluster.ts';
import type { ProjectKind } from '../kinds.ts';
import { PROJECT_OPTION, projectDir, projectKinds } from '../project-dir.ts';
import { queueDepth, queueName, type QueueDepth } from '../queue-depth.ts';
import { accessReviewSpec, boundGroups, loadPermissionChecks, permissionLabel, type PermissionCheck } from '../rbac.ts';
import { TARGET_OPTIONS, resolveTarget, sqsClient, type Target } from '../target.ts';
import type { CommandResult } from './command.ts';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packagedReserveProblems } from '../../core/invocation/budget.ts';
import { parseServerlessYaml } from '../../project/serverless-yml.ts';

export const doctorSpec: CommandSpec = {
  name: 'doctor',
  summary: "check cluster access, CRDs, the functions' RBAC, the queues and EKS access",
  usage: '[options]',
  details:
    'Permissions are checked for the identity of the kubeconfig (--kubeconfig, KUBECONFIG, or a running\n' +
    "`operless dev`). To check the function's identity, use its kubeconfig, or impersonate it with\n" +
    '--as <any user name> --as-group <its group> (the group your ClusterRoleBinding in infra/rbac names).\n' +
    'The EKS check runs when OPERLESS_EKS_CLUSTER is set (with AWS_REGION and AWS credentials).',
  options: { ...TARGET_OPTIONS, ...PROJECT_OPTION, ...IMPERSONATION_OPTIONS },
  examples: [
    'operless doctor',
    'operless doctor --as operless-function --as-group operless:memcached',
    'OPERLESS_EKS_CLUSTER=shop-eks AWS_REGION=eu-west-1 operless doctor --queue-url $QUEUE --dlq-url $DLQ',
  ],
};

export interface CheckResult {
  readonly name: string;
  readonly state: 'pass' | 'fail' | 'skip';
  readonly detail: string;
  readonly fix?: string;
}

const pass = (name: string, detail: string): CheckResult => ({ name, state: 'pass', detail });
const fail = (name: string, detail: string, fix: string): CheckResult => ({ name, state: 'fail', detail, fix });
const skip = (name: string, detail: string): CheckResult => ({ name, state: 'skip', detail });

export async function doctor(argv: string[]): Promise<CommandResult> {
  const args = parseCommandArgs(doctorSpec, argv);
  if (args.values.help) return { output: helpText(doctorSpec) };
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument "${args.positionals[0]}"`);
  const target = resolveTarget(args);
  const who = impersonationFrom(args);
  const root = projectDir(args);
  const checks: CheckResult[] = [
    ...budgetChecks(root),
    ...(await clusterChecks(target, who, projectKinds(root), join(root, 'infra', 'rbac'))),
    ...(await queueChecks(target)),
    ...(await eksChecks(target, process.env)),
  ];
  const ok = checks.every((c) => c.state !== 'fail');
  const exitCode = ok ? 0 : 1;
  if (target.json) return { output: `${JSON.stringify({ ok, checks }, null, 2)}\n`, exitCode };
  return { output: renderChecks(checks), exitCode };
}

/** One line per check, the fix indented below a failure, and a summary line (pure). */
export function renderChecks(checks: readonly CheckResult[]): string {
  const mark = { pass: '✔', fail: '✘', skip: '–' } as const;
  let lastFix: string | undefined;
  const lines = checks.flatMap((c) => {
    const fix = c.fix === undefined ? [] : [`    fix: ${c.fix === lastFix ? 'as above' : c.fix}`];
    if (c.fix !== undefined) lastFix = c.fix;
    return [`${mark[c.state]} ${c.name}: ${c.detail}`, ...fix];
  });
  const failed = checks.filter((c) => c.state === 'fail').length;
  lines.push('', failed === 0 ? 'All checks passed.' : `${failed} check(s) failed.`);
  return `${lines.join('\n')}\n`;
}

function budgetChecks(root: string): CheckResult[] {
  const path = join(root, 'serverless.yml');
  if (!existsSync(path)) return [skip('time budget', 'no serverless.yml in the project folder (pass --project <dir>)')];
  try {
    return [reserveCheck(readFileSync(path, 'utf8'))];
  } catch (err) {
    return [fail('time budget', `serverless.yml: ${errorMessage(err)}`, 'fix serverless.yml')];
  }
}

/** Each reconcile function's budget reserve against its timeout, from serverless.yml's text (pure). */
export function reserveCheck(serverlessYaml: string): CheckResult {
  const functions = parseServerlessYaml(serverlessYaml).runtimes.filter((f) => f.sqs);
  const problems = packagedReserveProblems(functions);
  if (problems.length > 0) {
    return fail(
      'time budget',
      problems.join('; '),
      "lower OPERLESS_BUDGET_RESERVE_MS well below the function's timeout in serverless.yml, or remove it for the default",
    );
  }
  if (functions.length === 0) return skip('time budget', 'serverless.yml has no reconcile function (none with an sqs event)');
  return pass(
    'time budget',
    functions
      .map(
        (f) =>
          `${f.name}: timeout ${f.timeout} s, reserve ${f.environment.OPERLESS_BUDGET_RESERVE_MS ?? 'default'}${f.environment.OPERLESS_BUDGET_RESERVE_MS ? ' ms' : ''}`,
      )
      .join('; '),
  );
}

async function clusterChecks(target: Target, who: Impersonation | undefined, kinds: readonly ProjectKind[], rbacDir: string): Promise<CheckResult[]> {
  let cluster: ClusterConnection;
  try {
    cluster = await connectCluster(target, who);
  } catch (err) {
    return [
      fail('cluster reachable', errorMessage(err), 'pass --kubeconfig <path> [--context <name>], set KUBECONFIG, or run next to a running `operless dev`'),
    ];
  }
  try {
    const results: CheckResult[] = [];
    try {
      const version = (await cluster.transport.request({ method: 'GET', path: '/version' })).body as { gitVersion?: string };
      results.push(pass('cluster reachable', `${cluster.server}, Kubernetes ${version.gitVersion ?? '(unknown version)'} (${cluster.source})`));
    } catch (err) {
      results.push(
        fail(
          'cluster reachable',
          errorMessage(err),
          isKubeApiError(err) && err.status === 401
            ? 'the credentials in the kubeconfig were refused: refresh them (e.g. `aws eks update-kubeconfig`) or use another --context'
            : 'check that the API server is up and reachable from here (VPN, endpoint access, --context)',
        ),
      );
      return results;
    }
    const identity = await identityCheck(cluster.transport, who, boundGroups(rbacDir));
    results.push(identity);
    results.push(
      ...(kinds.length === 0
        ? [skip('CRDs', 'no CRDs in infra/crds/ (run in your project folder, or pass --project <dir>)')]
        : await Promise.all(kinds.map((k) => crdCheck(cluster.transport, k)))),
    );
    const permissions = loadPermissionChecks(rbacDir);
    results.push(
      ...(permissions.length === 0
        ? [skip('permissions', 'no ClusterRole or Role in infra/rbac/: nothing to check')]
        : await permissionResults(cluster.transport, permissions)),
    );
    return results;
  } finally {
    await cluster.close();
  }
}

async function identityCheck(transport: KubeTransport, who: Impersonation | undefined, groups: readonly string[]): Promise<CheckResult> {
  try {
    const review = (
      await transport.request({
        method: 'POST',
        path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      })
    ).body as { status?: { userInfo?: { username?: string; groups?: string[] } } };
    const user = review.status?.userInfo?.username ?? '(unknown)';
    const userGroups = review.status?.userInfo?.groups ?? [];
    const admin = userGroups.includes('system:masters');
    const hint =
      admin && !who
        ? ` — an administrator, so every permission check below passes; to check the function's identity: --as operless-function${groups.map((g) => ` --as-group ${g}`).join('') || ' --as-group <its group>'}`
        : '';
    return pass('identity', `${user} [${userGroups.join(', ')}]${hint}`);
  } catch (err) {
    if (who && isKubeApiError(err) && err.status === 403) {
      return fail(
        'identity',
        `impersonating ${who.user} was refused: ${errorMessage(err)}`,
        "impersonation needs the `impersonate` verb on users and groups; use an admin kubeconfig or the function's own kubeconfig",
      );
    }
    return skip('identity', `could not ask the API server who we are (${errorMessage(err)})`);
  }
}

async function crdCheck(transport: KubeTransport, kind: ProjectKind): Promise<CheckResult> {
  const name = `${kind.plural}.${kind.group}`;
  const version = kind.apiVersion.split('/')[1] ?? kind.apiVersion;
  const check = `CRD ${name}`;
  const fix = `kubectl apply -f infra/crds/${name}.yaml (regenerate it with \`operless crd\`)`;
  try {
    const crd = (await transport.request({ method: 'GET', path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}` })).body as {
      spec?: { versions?: { name: string; served?: boolean }[] };
      status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
    };
    const established = crd.status?.conditions?.find((c) => c.type === 'Established');
    if (established?.status !== 'True') {
      return fail(
        check,
        `installed but not Established${established?.message ? ` (${established.message})` : ''}`,
        `kubectl describe crd ${name}; then ${fix}`,
      );
    }
    const served = crd.spec?.versions?.find((v) => v.name === version)?.served === true;
    if (!served) {
      return fail(
        check,
        `installed and Established, but does not serve ${version} (serves ${
          (crd.spec?.versions ?? [])
            .filter((v) => v.served)
            .map((v) => v.name)
            .join(', ') || 'nothing'
        })`,
        fix,
      );
    }
    return pass(check, `installed, Established, serves ${version}`);
  } catch (err) {
    if (isKubeApiError(err) && err.status === 404) return fail(check, 'not installed', fix);
    if (!isKubeApiError(err) || err.status !== 403) return fail(check, errorMessage(err), fix);
  }
  // This identity may not read CRDs (a function should not): ask API discovery instead.
  try {
    const list = (await transport.request({ method: 'GET', path: `/apis/${kind.group}/${version}` })).body as { resources?: { name: string }[] };
    if (list.resources?.some((r) => r.name === kind.plural))
      return pass(check, `served as ${kind.apiVersion} ${kind.plural} (per API discovery; this identity may not read CRDs)`);
    return fail(check, `${kind.apiVersion} does not serve ${kind.plural}`, fix);
  } catch (err) {
    if (isKubeApiError(err) && err.status === 404) return fail(check, `not installed (${kind.apiVersion} is not served)`, fix);
    return fail(check, errorMessage(err), fix);
  }
}

interface Review {
  readonly check: PermissionCheck;
  readonly allowed: boolean;
  readonly reason?: string;
}

async function permissionResults(transport: KubeTransport, permissions: readonly PermissionCheck[]): Promise<CheckResult[]> {
  const reviews: Review[] = [];
  for (const check of permissions) {
    try {
      const res = (
        await transport.request({
          method: 'POST',
          path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
          body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: accessReviewSpec(check) },
        })
      ).body as { status?: { allowed?: boolean; reason?: string; evaluationError?: string } };
      const reason = res.status?.evaluationError || res.status?.reason;
      reviews.push({ check, allowed: res.status?.allowed === true, ...(reason ? { reason } : {}) });
    } catch (err) {
      reviews.push({ check, allowed: false, reason: `the review itself failed: ${errorMessage(err)}` });
    }
  }
  return groupReviews(reviews);
}

/** One result per resource (all its verbs), failures naming the missing verbs (pure). */
export function groupReviews(reviews: readonly Review[]): CheckResult[] {
  const byResource = new Map<string, Review[]>();
  for (const r of reviews) {
    const resource = permissionLabel({ ...r.check, verb: '' }).trim() + (r.check.namespace ? ` in namespace ${r.check.namespace}` : '');
    byResource.set(resource, [...(byResource.get(resource) ?? []), r]);
  }
  return [...byResource.entries()].map(([resource, rs]) => {
    const denied = rs.filter((r) => !r.allowed);
    const name = `permission on ${resource}`;
    if (denied.length === 0) return pass(name, rs.map((r) => r.check.verb).join(', '));
    const source = denied[0]!.check.source;
    const reasons = [...new Set(denied.map((r) => r.reason).filter(Boolean))];
    return fail(
      name,
      `missing ${denied.map((r) => r.check.verb).join(', ')}${
        rs.length > denied.length
          ? ` (has ${rs
              .filter((r) => r.allowed)
              .map((r) => r.check.verb)
              .join(', ')})`
          : ''
      }` + (reasons.length > 0 ? ` — ${reasons.join('; ')}` : ''),
      `kubectl apply -f ${source.split(' ')[0]} (${source.split(' ').slice(1).join(' ')}) and bind it to this identity (on EKS: an access entry with the binding's group, docs/deploy.md)`,
    );
  });
}

async function queueChecks(target: Target): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const sqs: SQSClient = sqsClient(target);
  try {
    let work: QueueDepth | undefined;
    if (!target.queueUrl) {
      results.push(
        fail(
          'work queue',
          'not configured',
          'pass --queue-url <url> or set OPERLESS_QUEUE_URL (the stack output WorkQueueUrl), or run next to a running `operless dev`',
        ),
      );
    } else {
      try {
        work = await queueDepth(sqs, target.queueUrl);
        results.push(pass('work queue', `${target.queueUrl} answers (${work.visible} visible, ${work.inFlight} in flight, ${work.delayed} delayed)`));
      } catch (err) {
        results.push(fail('work queue', `${target.queueUrl}: ${errorMessage(err)}`, queueFix(target)));
      }
    }
    if (!target.dlqUrl) {
      results.push(fail('dead-letter queue', 'not configured', 'pass --dlq-url <url> or set OPERLESS_DLQ_URL (the stack output DeadLetterQueueUrl)'));
    } else {
      try {
        const dlq = await queueDepth(sqs, target.dlqUrl);
        results.push(pass('dead-letter queue', `${target.dlqUrl} answers (${dlq.visible + dlq.inFlight + dlq.delayed} message(s))`));
      } catch (err) {
        results.push(fail('dead-letter queue', `${target.dlqUrl}: ${errorMessage(err)}`, queueFix(target)));
      }
    }
    if (work && target.dlqUrl) results.push(redriveCheck(work, target.dlqUrl));
    return results;
  } finally {
    sqs.destroy();
  }
}

/** The work queue must hand poison messages to the DLQ after some receives (pure). */
export function redriveCheck(work: QueueDepth, dlqUrl: string): CheckResult {
  const name = 'redrive policy';
  const dlqName = queueName(dlqUrl);
  const fix = `set the work queue's RedrivePolicy to {"deadLetterTargetArn":"<ARN of ${dlqName}>","maxReceiveCount":5} (serverless.yml does this)`;
  if (!work.redrive) return fail(name, 'the work queue has none: a message that always fails would be retried until it expires', fix);
  if (!work.redrive.deadLetterTargetArn.endsWith(`:${dlqName}`)) {
    return fail(
      name,
      `the work queue dead-letters to ${work.redrive.deadLetterTargetArn}, not to ${dlqName}`,
      `pass the DLQ the queue really uses (--dlq-url), or ${fix}`,
    );
  }
  return pass(name, `after ${work.redrive.maxReceiveCount} receives to ${dlqName}`);
}

function queueFix(target: Target): string {
  return target.endpoint
    ? `check that the broker at ${target.endpoint} runs and the queue exists`
    : `check the URL, the region (${target.region}) and the AWS credentials (e.g. \`aws sts get-caller-identity\`); the identity needs sqs:GetQueueAttributes`;
}

async function eksChecks(target: Target, env: NodeJS.ProcessEnv): Promise<CheckResult[]> {
  const clusterName = env.OPERLESS_EKS_CLUSTER;
  if (!clusterName) return [skip('EKS token', 'OPERLESS_EKS_CLUSTER is not set (the functions use a kubeconfig)')];
  const name = `EKS token for ${clusterName}`;
  const { eksAccess } = await import('../../kube/eks.ts');
  const { createTransport } = await import('../../kube/transport.ts');
  let token: string;
  let transport: KubeTransport;
  try {
    const auth = await eksAccess(clusterName, env.AWS_REGION ?? target.region, env);
    token = await auth.bearerToken!();
    transport = createTransport(auth, { userAgent: 'operless-cli' });
  } catch (err) {
    return [
      fail(
        name,
        errorMessage(err),
        "set AWS_REGION and AWS credentials (or a profile) for the function's role; without eks:DescribeCluster also set OPERLESS_EKS_ENDPOINT and OPERLESS_EKS_CA",
      ),
    ];
  }
  const results = [pass(name, `minted (${token.length} characters)`)];
  try {
    await transport.request({ method: 'GET', path: '/version' });
    results.push(pass(`EKS API server accepts the token`, transport.server));
  } catch (err) {
    results.push(
      fail(
        'EKS API server accepts the token',
        errorMessage(err),
        'give these AWS credentials an EKS access entry (aws eks create-access-entry --kubernetes-groups <the RBAC group>); see docs/deploy.md',
      ),
    );
  } finally {
    await transport.close();
  }
  return results;
}
