/**
 * Template of `functions/<kind>.ts`: the kind's Lambda entry point (`handler`, and the
 * `controllers` it serves for `operless dev`). Pure.
 */
import { camel, kebab } from '../../names.ts';
import type { ApiEntry } from '../../project-file.ts';

export function functionModule(api: ApiEntry): string {
  const file = kebab(api.kind);
  return `/**
 * Lambda entry point: the ${api.kind} reconcile function, fed by its SQS work queue
 * (serverless.yml). \`controllers\` is exported beside \`handler\` so \`operless dev\` knows what
 * this function reconciles and owns (the forwarder's watches).
 */
import { defineController, toSqsHandler } from 'operless';
import { ${camel(api.kind)}Controller } from '../src/${file}/controller.ts';

export const controllers = [defineController(${camel(api.kind)}Controller)];
export const handler = toSqsHandler(controllers);
`;
}
