/**
 * Evaluates a packaged CloudFormation template's conditions and parameter references the way
 * CloudFormation would at deploy time with the parameters' defaults (serverless writes the
 * `params` into those defaults): `Ref` to a parameter, `Fn::Equals`, `Fn::Not`, `Fn::And`,
 * `Fn::Or`, `Condition`, `Fn::Join`, `Fn::Split`, `Fn::Select`, and `Fn::Sub` over parameters
 * (other `${...}` names are left as they are). `Fn::GetAtt` and resource `Ref`s stay as written.
 */
import type { CloudFormationTemplate } from '../../scripts/package.ts';

type Json = unknown;
interface Parameter {
  readonly Type: string;
  readonly Default?: string;
}

function parameters(template: CloudFormationTemplate): Record<string, Parameter> {
  return (template as { Parameters?: Record<string, Parameter> }).Parameters ?? {};
}

const isNoValue = (v: Json): boolean => typeof v === 'object' && v !== null && !Array.isArray(v) && (v as Record<string, Json>).Ref === 'AWS::NoValue';

/** The value of `node` with parameter references resolved to their defaults. */
export function resolveValue(template: CloudFormationTemplate, node: Json): Json {
  // An item that resolves to AWS::NoValue is left out, as CloudFormation does.
  if (Array.isArray(node)) return node.map((n) => resolveValue(template, n)).filter((v) => !isNoValue(v));
  if (node === null || typeof node !== 'object') return node;
  const entries = Object.entries(node as Record<string, Json>);
  const [key, arg] = entries[0] ?? [];
  if (entries.length !== 1 || key === undefined) return Object.fromEntries(entries.map(([k, v]) => [k, resolveValue(template, v)]));
  const params = parameters(template);
  switch (key) {
    case 'Ref': {
      const p = params[arg as string];
      if (!p) return node; // a resource or pseudo parameter: left as is
      const value = p.Default ?? '';
      return p.Type === 'CommaDelimitedList' ? value.split(',') : value;
    }
    case 'Fn::Join': {
      const [sep, parts] = arg as [string, Json];
      return (resolveValue(template, parts) as Json[]).map(String).join(sep);
    }
    case 'Fn::Split': {
      const [sep, text] = arg as [string, Json];
      return String(resolveValue(template, text)).split(sep);
    }
    case 'Fn::Select': {
      const [index, list] = arg as [number, Json];
      const items = resolveValue(template, list) as Json[];
      if (index >= items.length) throw new Error(`Fn::Select index ${index} out of range of ${JSON.stringify(items)}`);
      return items[index];
    }
    case 'Fn::Sub': {
      const [text, vars] = typeof arg === 'string' ? [arg, {}] : (arg as [string, Record<string, Json>]);
      return text.replace(/\$\{([^}]+)\}/g, (whole, name: string) => {
        if (name in vars) return String(resolveValue(template, vars[name]));
        return params[name] ? String(params[name].Default ?? '') : whole;
      });
    }
    case 'Fn::If': {
      const [condition, yes, no] = arg as [string, Json, Json];
      return resolveValue(template, isTrue(template, condition) ? yes : no);
    }
    case 'Fn::Equals':
    case 'Fn::Not':
    case 'Fn::And':
    case 'Fn::Or':
    case 'Condition':
      return evaluate(template, node);
    default: // Fn::GetAtt and the like: decided at deploy time, left as they are
      return { [key]: resolveValue(template, arg) };
  }
}

function evaluate(template: CloudFormationTemplate, node: Json): boolean | Json {
  const [[key, arg]] = Object.entries(node as Record<string, Json>) as [[string, Json]];
  switch (key) {
    case 'Fn::Equals': {
      const [a, b] = (arg as Json[]).map((x) => resolveValue(template, x));
      return JSON.stringify(a) === JSON.stringify(b);
    }
    case 'Fn::Not':
      return !resolveValue(template, (arg as Json[])[0]);
    case 'Fn::And':
      return (arg as Json[]).every((x) => resolveValue(template, x) === true);
    case 'Fn::Or':
      return (arg as Json[]).some((x) => resolveValue(template, x) === true);
    case 'Condition':
      return isTrue(template, arg as string);
    default:
      throw new Error(`cfn-conditions: ${key} is not evaluated here`);
  }
}

/** Whether condition `name` holds with the parameters' defaults. */
export function isTrue(template: CloudFormationTemplate, name: string): boolean {
  const node = template.Conditions?.[name];
  if (node === undefined) throw new Error(`no condition ${name} in the template`);
  const value = resolveValue(template, node);
  if (typeof value !== 'boolean') throw new Error(`condition ${name} evaluated to ${JSON.stringify(value)}, not a boolean`);
  return value;
}

/** The resources CloudFormation would create: those without a condition or whose condition holds. */
export function createdResources(template: CloudFormationTemplate): string[] {
  return Object.entries(template.Resources)
    .filter(([, r]) => !r.Condition || isTrue(template, r.Condition))
    .map(([id]) => id);
}
