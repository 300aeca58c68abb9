/**
 * The public API report: every name each package entry (package.json `exports`) hands out, with
 * its kind and its signature — functions with their parameters and return type, constants with
 * their type, interfaces with their members, classes with their public members — rendered
 * from the sources by the TypeScript compiler into docs/reference/api.md.
 *
 *   node scripts/api-report.ts           # print it
 *   node scripts/api-report.ts --write   # write docs/reference/api.md
 *   node scripts/api-report.ts --check   # exit 1 when docs/reference/api.md is not a fresh render
 *
 * `test/unit/api-report.test.ts` runs the check in `npm test`, so the surface changes only on
 * purpose: a change to it shows in the diff of docs/reference/api.md, in the same commit.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
export const API_REPORT_PATH = join(ROOT, 'docs', 'reference', 'api.md');

/** The package's entries: `operless`, `operless/kinds`, … with their source files. */
export function packageEntries(): { entry: string; source: string }[] {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, string | Record<string, string>> };
  return Object.entries(manifest.exports)
    .filter(([, target]) => typeof target === 'object' && target['operless-source'])
    .map(([key, target]) => ({
      entry: key === '.' ? 'operless' : `operless/${key.slice(2)}`,
      source: join(ROOT, (target as Record<string, string>)['operless-source']!),
    }));
}

const FLAGS = ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.WriteArrowStyleSignature | ts.TypeFormatFlags.UseAliasDefinedOutsideCurrentScope;

/** One line, whatever the formatter's layout: a union's leading `|` (a broken line's) goes too. */
function oneLine(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^\|\s*/, '')
    .replace(/=\s*\|\s*/, '= ');
}

function describe(checker: ts.TypeChecker, exported: ts.Symbol): string {
  const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
  const name = exported.getName();
  const declaration = symbol.declarations?.[0];
  const lines: string[] = [];
  if (symbol.flags & ts.SymbolFlags.Class && declaration) {
    const type = checker.getDeclaredTypeOfSymbol(symbol);
    const members = checker
      .getPropertiesOfType(type)
      .filter((p) => !(ts.getCombinedModifierFlags(p.valueDeclaration ?? p.declarations![0]!) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)));
    lines.push(
      `class ${name} { ${members
        .map((m) => m.getName())
        .sort()
        .join('; ')} }`,
    );
  } else if (symbol.flags & ts.SymbolFlags.Function && declaration) {
    const type = checker.getTypeOfSymbolAtLocation(symbol, declaration);
    for (const signature of type.getCallSignatures()) lines.push(`function ${name}${checker.signatureToString(signature, declaration, FLAGS)}`);
  } else if (symbol.flags & ts.SymbolFlags.Variable && declaration) {
    lines.push(`const ${name}: ${checker.typeToString(checker.getTypeOfSymbolAtLocation(symbol, declaration), declaration, FLAGS)}`);
  }
  if (symbol.flags & ts.SymbolFlags.Interface) {
    const type = checker.getDeclaredTypeOfSymbol(symbol);
    const members = checker.getPropertiesOfType(type).map((m) => `${m.getName()}${m.flags & ts.SymbolFlags.Optional ? '?' : ''}`);
    lines.push(`interface ${name} { ${members.join('; ')} }`);
  } else if (symbol.flags & ts.SymbolFlags.TypeAlias && declaration && ts.isTypeAliasDeclaration(declaration)) {
    lines.push(`type ${name} = ${oneLine(declaration.type.getText())}`);
  }
  return lines.length > 0 ? lines.map(oneLine).join('\n') : `${name}`;
}

/** The report's Markdown. */
export function renderApiReport(): string {
  const entries = packageEntries();
  const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
  if (!config) throw new Error('tsconfig.json could not be read');
  const program = ts.createProgram(
    entries.map((e) => e.source),
    config.options,
  );
  const checker = program.getTypeChecker();
  const out: string[] = [
    '# The public API',
    '',
    'Every name each entry of the `operless` package hands out, generated from the sources by',
    '`node scripts/api-report.ts --write` and checked by `npm test` (`test/unit/api-report.test.ts`):',
    'a change to the public surface shows here, in the same commit. Semantic versioning applies to',
    'exactly these names (docs/compatibility.md).',
    '',
  ];
  for (const { entry, source } of entries) {
    const file = program.getSourceFile(source);
    const moduleSymbol = file && checker.getSymbolAtLocation(file);
    if (!moduleSymbol) throw new Error(`${entry}: ${source} has no exports`);
    const exports = checker.getExportsOfModule(moduleSymbol).sort((a, b) => a.getName().localeCompare(b.getName()));
    out.push(`## \`${entry}\` (${exports.length} names)`, '', '```ts', ...exports.map((s) => describe(checker, s)), '```', '');
  }
  return `${out.join('\n').trimEnd()}\n`;
}

/** The root entry's names (for the size check). */
export function rootNames(report: string): string[] {
  const section = report.split('## `operless` (')[1]?.split('```ts\n')[1]?.split('```')[0] ?? '';
  return section
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => l.replace(/^(function|const|class|interface|type) /, '').split(/[^A-Za-z0-9_$]/)[0]!)
    .filter((n, i, all) => all.indexOf(n) === i);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const report = renderApiReport();
  const mode = process.argv[2];
  if (mode === '--write') {
    writeFileSync(API_REPORT_PATH, report);
    process.stderr.write(`wrote ${API_REPORT_PATH}\n`);
  } else if (mode === '--check') {
    const current = readFileSync(API_REPORT_PATH, 'utf8');
    if (current !== report) {
      process.stderr.write('docs/reference/api.md is stale: the public API changed. Run `node scripts/api-report.ts --write` and commit the diff.\n');
      process.exitCode = 1;
    }
  } else {
    process.stdout.write(report);
  }
}
