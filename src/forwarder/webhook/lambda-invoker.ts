/**
 * The production `WebhookInvoker`: a synchronous `lambda:InvokeFunction` through the AWS
 * SDK's Lambda client, with the forwarder's IAM identity (IRSA / Pod Identity). Locally and
 * in tests the same client points at the local runner's Invoke API (`endpoint`).
 *
 * Guarantees: never throws; one attempt (the API server's write waits, and its timeout is
 * short), aborted at the caller's signal. A function error (`FunctionError`, e.g. an
 * unhandled exception or a Lambda timeout) answers 502, throttling and an unreachable
 * service 503, the deadline 504 — each with a message an operator can act on. The SDK's
 * Lambda client is imported on the first invocation: a forwarder without webhooks never loads it.
 * A ConversionReview too large for one invocation is invoked in chunks (conversion-split.ts).
 */
import type { LambdaClient } from '@aws-sdk/client-lambda';
import { errorMessage } from '../../observability/log.ts';
import { splitConversions } from './conversion-split.ts';
import type { InvokeOutcome, WebhookInvoker } from './server.ts';

export interface LambdaInvokerOptions {
  /** An endpoint override (the local runner's Invoke API); default: the region's Lambda endpoint. */
  readonly endpoint?: string;
  readonly region?: string;
  readonly client?: LambdaClient;
}

export function lambdaInvoker(options: LambdaInvokerOptions = {}): WebhookInvoker {
  let sdk: Promise<{ client: LambdaClient; InvokeCommand: typeof import('@aws-sdk/client-lambda').InvokeCommand }> | undefined;
  const load = () =>
    (sdk ??= import('@aws-sdk/client-lambda').then((m) => ({
      InvokeCommand: m.InvokeCommand,
      client:
        options.client ??
        new m.LambdaClient({
          maxAttempts: 1,
          ...(options.endpoint ? { endpoint: options.endpoint } : {}),
          ...(options.region ? { region: options.region } : {}),
        }),
    })));
  return splitConversions(async (functionName, payload, signal): Promise<InvokeOutcome> => {
    const body = new TextEncoder().encode(JSON.stringify(payload));
    try {
      const { client, InvokeCommand } = await load();
      const out = await client.send(new InvokeCommand({ FunctionName: functionName, InvocationType: 'RequestResponse', Payload: body }), {
        abortSignal: signal,
      });
      const text = out.Payload ? new TextDecoder().decode(out.Payload) : '';
      if (out.FunctionError) return { ok: false, status: 502, message: `the function failed (${out.FunctionError}): ${functionErrorMessage(text)}` };
      return { ok: true, payload: text === '' ? null : (JSON.parse(text) as unknown) };
    } catch (err) {
      if (signal.aborted)
        return {
          ok: false,
          status: 504,
          message: "no answer before the API server's timeout (a cold start or a slow handler); raise timeoutSeconds or provisioned concurrency",
        };
      const name = (err as { name?: string }).name ?? '';
      if (name === 'TooManyRequestsException')
        return { ok: false, status: 503, message: `throttled by Lambda: raise the function's reserved concurrency (${errorMessage(err)})` };
      return { ok: false, status: 503, message: `cannot invoke it: ${name ? `${name}: ` : ''}${errorMessage(err)}` };
    }
  });
}

function functionErrorMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { errorMessage?: unknown; errorType?: unknown };
    if (typeof parsed.errorMessage === 'string')
      return `${typeof parsed.errorType === 'string' ? `${parsed.errorType}: ` : ''}${parsed.errorMessage}`.slice(0, 500);
  } catch {
    // not JSON: show the start of it
  }
  return text.slice(0, 500);
}
