/**
 * The cost model: AWS list prices applied to measured counts (SQS requests by action,
 * Lambda invocations and their billed duration), per million reconciles, next to an
 * always-on controller pod. Pure.
 *
 * Prices (us-east-1, standard tiers, as listed on aws.amazon.com/sqs/pricing,
 * aws.amazon.com/lambda/pricing and aws.amazon.com/fargate/pricing; read 2026-11; see
 * /work/shared/notes/aws.md §8): SQS $0.40 per million requests ($0.50 on FIFO queues) (each 64 KiB chunk is one
 * request; the event source mapping's receives and deletes are billed too); Lambda $0.20 per
 * million requests and $0.0000133334 per GB-second on arm64, billed per 1 ms; Fargate arm64
 * $0.03238 per vCPU-hour and $0.00356 per GB-hour.
 */

export const PRICES = {
  source: 'AWS list prices, us-east-1, aws.amazon.com/{sqs,lambda,fargate}/pricing (read 2026-11)',
  sqsPerMillionRequests: 0.4,
  /** FIFO queues (per-key ordering's work queue and DLQ); its delay queue is standard, so this prices per-key's requests from above. */
  sqsFifoPerMillionRequests: 0.5,
  lambdaPerMillionRequests: 0.2,
  lambdaArmPerGbSecond: 0.0000133334,
  fargateArmPerVcpuHour: 0.03238,
  fargateArmPerGbHour: 0.00356,
} as const;

export interface MeasuredTraffic {
  readonly reconciles: number;
  readonly sqsRequests: number;
  readonly invocations: number;
  /** Sum of invocation durations (ms), each rounded up to 1 ms as billed. */
  readonly billedMs: number;
  readonly memoryMB: number;
  /** Per-key ordering: price the SQS requests at the FIFO rate. */
  readonly fifo?: boolean;
}

export interface CostPerMillion {
  readonly sqs: number;
  readonly lambdaRequests: number;
  readonly lambdaDuration: number;
  readonly total: number;
  readonly sqsRequestsPerReconcile: number;
  readonly invocationsPerReconcile: number;
  readonly msPerInvocation: number;
}

export function costPerMillionReconciles(t: MeasuredTraffic): CostPerMillion {
  const perReconcile = (x: number) => (t.reconciles > 0 ? x / t.reconciles : Number.NaN);
  const sqs = perReconcile(t.sqsRequests) * (t.fifo ? PRICES.sqsFifoPerMillionRequests : PRICES.sqsPerMillionRequests);
  const lambdaRequests = perReconcile(t.invocations) * PRICES.lambdaPerMillionRequests;
  const gbSeconds = perReconcile((t.billedMs / 1000) * (t.memoryMB / 1024)) * 1e6;
  const lambdaDuration = gbSeconds * PRICES.lambdaArmPerGbSecond;
  return {
    sqs,
    lambdaRequests,
    lambdaDuration,
    total: sqs + lambdaRequests + lambdaDuration,
    sqsRequestsPerReconcile: perReconcile(t.sqsRequests),
    invocationsPerReconcile: perReconcile(t.invocations),
    msPerInvocation: t.invocations > 0 ? t.billedMs / t.invocations : Number.NaN,
  };
}

/** An always-on controller pod on Fargate arm64 (0.25 vCPU, 0.5 GB, the smallest size), per 30-day month. */
export function alwaysOnPodPerMonth(vcpu = 0.25, gb = 0.5): number {
  return (vcpu * PRICES.fargateArmPerVcpuHour + gb * PRICES.fargateArmPerGbHour) * 24 * 30;
}
