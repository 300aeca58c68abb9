/**
 * Templates of a new project's `tsconfig.json` (strict, Node 24 type stripping) and `.gitignore`.
 */

export const TSCONFIG = `${JSON.stringify(
  {
    compilerOptions: {
      target: 'ES2024',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      lib: ['ES2024'],
      types: ['node'],
      strict: true,
      noUncheckedIndexedAccess: true,
      verbatimModuleSyntax: true,
      erasableSyntaxOnly: true,
      allowImportingTsExtensions: true,
      resolveJsonModule: true,
      isolatedModules: true,
      skipLibCheck: true,
      noEmit: true,
    },
    include: ['src', 'functions', 'test'],
  },
  null,
  2,
)}\n`;

export const GITIGNORE = ['node_modules/', '.serverless/', '.esbuild/', '.build/', '.operless/', '*.log', ''].join('\n');
