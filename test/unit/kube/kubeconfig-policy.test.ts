/**
 * A kubeconfig the function did not ship with (inline, SSM): exec plugins refused unless
 * OPERLESS_KUBECONFIG_ALLOW_EXEC=true, local file references (token-file, client certificate and
 * key, CA, an auth-provider's tokenFile or IdP CA) refused before the client loads the document,
 * naming the field and never its value, unless OPERLESS_KUBECONFIG_ALLOW_FILES=true, insecure-skip-tls-verify warned about, load errors
 * that never quote the document (a secret token in a broken kubeconfig stays out of the error).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClientFactory, KubeAccessError } from '../../../src/kube/factory.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeLoadError, fileReferences, quotesDocument } from '../../../src/kube/kubeconfig-policy.ts';
import { createLogger } from '../../../src/observability/log.ts';

const SECRET = 'sk-7f3a9c1e5b2d4f6a8c0e';
const kubeconfig = (user: string, cluster = 'certificate-authority-data: Zm9v') => `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://127.0.0.1:1", ${cluster} } }]
users: [{ name: u, user: ${user} }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;
const EXEC = kubeconfig(
  '{ exec: { apiVersion: client.authentication.k8s.io/v1beta1, command: /usr/local/bin/aws, args: [eks, get-token, --cluster-name, prod], env: [{ name: SECRET, value: hush } ] } }',
);
const AUTH_PROVIDER = kubeconfig('{ auth-provider: { name: gcp, config: { cmd-path: /bin/gcloud, cmd-args: config config-helper } } }');
const TOKEN = kubeconfig(`{ token: ${SECRET} }`);

test('an exec credential plugin in an inline or SSM kubeconfig is refused, naming the command and OPERLESS_KUBECONFIG_ALLOW_EXEC', async () => {
  const inline = createClientFactory({ env: { OPERLESS_KUBECONFIG_INLINE: EXEC } });
  await assert.rejects(
    inline('c'),
    (err: Error) =>
      err instanceof KubeAccessError &&
      /OPERLESS_KUBECONFIG_INLINE uses an exec credential plugin \(command "aws"\)/.test(err.message) &&
      /OPERLESS_KUBECONFIG_ALLOW_EXEC=true/.test(err.message) &&
      !/get-token|hush/.test(err.message),
  );
  const ssm = createClientFactory({ env: { OPERLESS_KUBECONFIG_SSM_PARAMETER: '/k' }, loadSsmParameter: async () => EXEC });
  await assert.rejects(ssm('c'), /SSM parameter \/k uses an exec credential plugin.*OPERLESS_KUBECONFIG_ALLOW_EXEC=true/);
  const provider = createClientFactory({ env: { OPERLESS_KUBECONFIG_SSM_PARAMETER: '/k' }, loadSsmParameter: async () => AUTH_PROVIDER });
  await assert.rejects(provider('c'), /auth-provider command \(cmd-path "gcloud"\).*OPERLESS_KUBECONFIG_ALLOW_EXEC=true/);
});

test('OPERLESS_KUBECONFIG_ALLOW_EXEC=true allows it (only the exact value "true")', async () => {
  const allowed = createClientFactory({ env: { OPERLESS_KUBECONFIG_INLINE: EXEC, OPERLESS_KUBECONFIG_ALLOW_EXEC: 'true' } });
  const client = await allowed('c');
  assert.equal(client.transport.server, 'https://127.0.0.1:1');
  await client.transport.close();
  const notQuite = createClientFactory({ env: { OPERLESS_KUBECONFIG_INLINE: EXEC, OPERLESS_KUBECONFIG_ALLOW_EXEC: '1' } });
  await assert.rejects(notQuite('c'), KubeAccessError);
});

test('insecure-skip-tls-verify: the client is built and a warning names the source and server', async () => {
  const lines: string[] = [];
  const factory = createClientFactory({
    env: { OPERLESS_KUBECONFIG_INLINE: kubeconfig(`{ token: ${SECRET} }`, 'insecure-skip-tls-verify: true') },
    log: createLogger({ write: (l) => lines.push(l) }),
  });
  const client = await factory('c');
  await client.transport.close();
  assert.equal(lines.length, 1);
  const line = JSON.parse(lines[0]!) as Record<string, unknown>;
  assert.equal(line.level, 'warn');
  assert.match(String(line.msg), /insecure-skip-tls-verify/);
  assert.equal(line.source, 'OPERLESS_KUBECONFIG_INLINE');
  assert.ok(!lines[0]!.includes(SECRET));
  const quiet: string[] = [];
  const verified = createClientFactory({ env: { OPERLESS_KUBECONFIG_INLINE: TOKEN }, log: createLogger({ write: (l) => quiet.push(l) }) });
  await (await verified('c')).transport.close();
  assert.deepEqual(quiet, []);
});

test('a broken kubeconfig holding a secret token: the error says where it broke, never the token', async () => {
  const broken = [
    TOKEN.replace('current-context: x', `current-context: x\n  token: ${SECRET}\n bad: [`), // YAML syntax error right after the token
    TOKEN.replace('users: [', `users: [{ name: ${SECRET}, user: { token: ${SECRET} } }, `).replace('server: "https://127.0.0.1:1", ', ''), // cluster without server
    `clusters: {{ ${SECRET}`,
  ];
  for (const doc of broken) {
    for (const env of [{ OPERLESS_KUBECONFIG_INLINE: doc }, { OPERLESS_KUBECONFIG_SSM_PARAMETER: '/k' }]) {
      const factory = createClientFactory({ env, loadSsmParameter: async () => doc });
      await assert.rejects(factory('c'), (err: Error) => {
        assert.ok(err instanceof KubeAccessError, String(err));
        assert.match(err.message, /could not load the kubeconfig/);
        assert.ok(!err.message.includes(SECRET), `the message quotes the token: ${err.message}`);
        assert.ok(!JSON.stringify(err, Object.getOwnPropertyNames(err)).includes(SECRET), 'nothing attached to the error quotes the token');
        assert.equal(err.cause, undefined);
        return true;
      });
    }
  }
});

test('describeLoadError: YAML errors by position and reason; messages quoting a value withheld, naming a key kept', () => {
  const yamlError = Object.assign(new Error(`bad indentation\n 3 | token: ${SECRET}`), {
    name: 'YAMLException',
    reason: 'bad indentation of a mapping entry',
    mark: { line: 2, column: 4 },
  });
  assert.equal(describeLoadError(yamlError, TOKEN), 'not valid YAML at line 3, column 5: bad indentation of a mapping entry');
  assert.match(describeLoadError(new Error(`unknown user ${SECRET}`), TOKEN), /withheld/);
  assert.equal(describeLoadError(new Error('clusters[0].cluster.server is missing'), TOKEN), 'clusters[0].cluster.server is missing');
  assert.equal(quotesDocument('current-context is missing', TOKEN), false);
  assert.equal(quotesDocument(`bad ${SECRET}`, TOKEN), true);
});

test('fileReferences: every field naming a local file, by its path in the document', () => {
  const doc = {
    clusters: [
      { name: 'a', cluster: { server: 's', 'certificate-authority-data': 'x' } },
      { name: 'b', cluster: { 'certificate-authority': '/etc/ca.pem' } },
    ],
    users: [
      { name: 'u', user: { 'token-file': '/proc/self/environ', 'client-certificate': '/c', 'client-key': '/k' } },
      {
        name: 'v',
        user: { 'auth-provider': { name: 'oidc', config: { tokenFile: '/t', 'idp-certificate-authority': '/i', 'idp-certificate-authority-data': 'ok' } } },
      },
      { name: 'w', user: { token: 't', 'client-certificate-data': 'c', 'client-key-data': 'k', 'token-file': '' } },
    ],
  };
  assert.deepEqual(fileReferences(doc), [
    'clusters[1].cluster.certificate-authority',
    'users[0].user.token-file',
    'users[0].user.client-certificate',
    'users[0].user.client-key',
    'users[1].user.auth-provider.config.tokenFile',
    'users[1].user.auth-provider.config.idp-certificate-authority',
  ]);
  for (const odd of [null, 'x', 7, [], { users: 'x' }, { users: [null, 1, { user: null }, { user: { 'auth-provider': null } }] }])
    assert.deepEqual(fileReferences(odd), []);
});

const secretFile = (dir: string) => {
  const path = join(dir, 'secret-token');
  writeFileSync(path, 'the-secret-of-this-host');
  return path;
};

test('an inline or SSM kubeconfig naming local files is refused with the fields named, before the token file is read', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'operless-kc-files-'));
  try {
    const path = secretFile(dir);
    const cases: [string, string, RegExp][] = [
      [kubeconfig(`{ token-file: ${path} }`), 'inline', /users\[0\]\.user\.token-file/],
      [
        kubeconfig('{ client-certificate: /etc/c.pem, client-key: /etc/k.pem }'),
        'inline',
        /users\[0\]\.user\.client-certificate, users\[0\]\.user\.client-key/,
      ],
      [kubeconfig('{ token: t }', 'certificate-authority: /etc/ca.pem'), 'ssm', /clusters\[0\]\.cluster\.certificate-authority/],
      [kubeconfig(`{ auth-provider: { name: oidc, config: { tokenFile: ${path} } } }`), 'ssm', /users\[0\]\.user\.auth-provider\.config\.tokenFile/],
      // A merge key hides nothing: the client reads merged fields, so does the check.
      [`base: &b { token-file: ${path} }\n${kubeconfig('{ <<: *b }')}`, 'inline', /users\[0\]\.user\.token-file/],
    ];
    for (const [document, via, field] of cases) {
      const factory =
        via === 'inline'
          ? createClientFactory({ env: { OPERLESS_KUBECONFIG_INLINE: document } })
          : createClientFactory({ env: { OPERLESS_KUBECONFIG_SSM_PARAMETER: '/k' }, loadSsmParameter: async () => document });
      await assert.rejects(factory('c'), (err: Error) => {
        assert.ok(err instanceof KubeAccessError, err.message);
        assert.match(err.message, field);
        assert.match(err.message, via === 'inline' ? /from OPERLESS_KUBECONFIG_INLINE names a local file/ : /from SSM parameter \/k names a local file/);
        assert.match(err.message, /OPERLESS_KUBECONFIG_ALLOW_FILES=true/);
        assert.ok(!err.message.includes(path) && !err.message.includes('/etc/'), 'the value is not quoted');
        return true;
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('OPERLESS_KUBECONFIG_ALLOW_FILES=true (exactly) allows them; a kubeconfig file on disk is not checked', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'operless-kc-files-'));
  try {
    const path = secretFile(dir);
    const document = kubeconfig(`{ token-file: ${path} }`);
    const allowed = await createClientFactory({ env: { OPERLESS_KUBECONFIG_INLINE: document, OPERLESS_KUBECONFIG_ALLOW_FILES: 'true' } })('c');
    assert.equal(allowed.transport.server, 'https://127.0.0.1:1');
    await allowed.transport.close();
    await assert.rejects(createClientFactory({ env: { OPERLESS_KUBECONFIG_INLINE: document, OPERLESS_KUBECONFIG_ALLOW_FILES: '1' } })('c'), KubeAccessError);
    const onDisk = join(dir, 'kubeconfig');
    writeFileSync(onDisk, document);
    const fromFile = await createClientFactory({ env: { OPERLESS_KUBECONFIG: onDisk } })('c');
    await fromFile.transport.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a syntax error is described by position, without quoting the document', async () => {
  const factory = createClientFactory({ env: { OPERLESS_KUBECONFIG_INLINE: 'users: [{ name: u, user: { token: sk-0123456789abcdef } }\nclusters: [' } });
  await assert.rejects(
    factory('c'),
    (err: Error) => /not valid YAML at line \d+, column \d+/.test(err.message) && !err.message.includes('sk-0123456789abcdef'),
  );
});
