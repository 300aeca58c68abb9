/**
 * A tiny certificate authority for the test control plane (envtest's "TinyCA"). Node can make
 * keys and sign bytes but has no certificate builder (`crypto.X509Certificate` only parses), so
 * the certificates are built with `@peculiar/x509` over Node's WebCrypto.
 *
 * Guarantees: certificates are ECDSA P-256 / SHA-256, parse with `crypto.X509Certificate`,
 * verify against their issuer, and carry the fields Kubernetes reads — subject CN (the user
 * name), one O per group (the groups), SANs for serving certificates, key usage and extended
 * key usage (serverAuth or clientAuth), basic constraints for the CA. Nothing here does I/O.
 *
 * `@peculiar/x509` resolves its ASN.1 schemas through tsyringe, which needs the Reflect
 * metadata API: `reflect-metadata` is imported first (ES modules evaluate in import order).
 */
import 'reflect-metadata';
import {
  BasicConstraintsExtension,
  cryptoProvider,
  ExtendedKeyUsage,
  ExtendedKeyUsageExtension,
  KeyUsageFlags,
  KeyUsagesExtension,
  SubjectAlternativeNameExtension,
  X509Certificate,
  X509CertificateGenerator,
  type Extension,
  type JsonGeneralName,
  type JsonName,
} from '@peculiar/x509';
import { createPrivateKey, KeyObject, randomBytes, webcrypto } from 'node:crypto';
import { isIP } from 'node:net';

cryptoProvider.set(webcrypto);

/** A certificate and its private key, both PEM. */
export interface KeyPair {
  readonly certPem: string;
  readonly keyPem: string;
}

export interface CertificateSpec {
  readonly commonName: string;
  /** Subject organisations; Kubernetes reads them as the user's groups. */
  readonly organizations?: readonly string[];
  /** DNS names and IP addresses the certificate is valid for (serving certificates). */
  readonly hosts?: readonly string[];
  readonly usage: 'ca' | 'server' | 'client';
  readonly validDays?: number;
  /** For tests: the clock. */
  readonly now?: Date;
}

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/** Makes a self-signed CA certificate. */
export async function createCertificateAuthority(commonName: string, now: Date = new Date()): Promise<KeyPair> {
  const keys = await newKeys();
  const cert = await X509CertificateGenerator.create({
    ...validity({ commonName, usage: 'ca', now }),
    subject: subjectName({ commonName, usage: 'ca' }),
    issuer: subjectName({ commonName, usage: 'ca' }),
    publicKey: keys.publicKey,
    signingKey: keys.privateKey,
    signingAlgorithm: ALGORITHM,
    extensions: extensions({ commonName, usage: 'ca' }),
  });
  return { certPem: cert.toString('pem'), keyPem: exportKey(keys.privateKey) };
}

/** Makes a certificate for `spec`, signed by `issuer`. */
export async function issueCertificate(issuer: KeyPair, spec: CertificateSpec): Promise<KeyPair> {
  const issuerCert = new X509Certificate(issuer.certPem);
  const issuerKey = createPrivateKey(issuer.keyPem).toCryptoKey(ALGORITHM, false, ['sign']);
  const keys = await newKeys();
  const cert = await X509CertificateGenerator.create({
    ...validity(spec),
    subject: subjectName(spec),
    issuer: issuerCert.subjectName,
    publicKey: keys.publicKey,
    signingKey: issuerKey,
    signingAlgorithm: ALGORITHM,
    extensions: extensions(spec),
  });
  return { certPem: cert.toString('pem'), keyPem: exportKey(keys.privateKey) };
}

function newKeys(): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
}

function exportKey(key: webcrypto.CryptoKey): string {
  return KeyObject.from(key).export({ type: 'pkcs8', format: 'pem' }).toString();
}

/** One RDN per attribute: CN, then one O per organisation (structured, so no escaping of `,` or `=`). */
function subjectName(spec: Pick<CertificateSpec, 'commonName' | 'organizations' | 'usage'>): JsonName {
  return [{ CN: [spec.commonName] }, ...(spec.organizations ?? []).map((o) => ({ O: [o] }))];
}

function validity(spec: CertificateSpec): { serialNumber: string; notBefore: Date; notAfter: Date } {
  const now = spec.now ?? new Date();
  const serial = randomBytes(16);
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x40; // positive, no leading zero byte
  return {
    serialNumber: serial.toString('hex'),
    notBefore: new Date(now.getTime() - 60 * 60 * 1000), // tolerate clock skew
    notAfter: new Date(now.getTime() + (spec.validDays ?? 3650) * 24 * 60 * 60 * 1000),
  };
}

function extensions(spec: CertificateSpec): Extension[] {
  if (spec.usage === 'ca') {
    return [
      new BasicConstraintsExtension(true, undefined, true),
      new KeyUsagesExtension(KeyUsageFlags.digitalSignature | KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign, true),
    ];
  }
  const out: Extension[] = [
    new BasicConstraintsExtension(false, undefined, true),
    new KeyUsagesExtension(KeyUsageFlags.digitalSignature | KeyUsageFlags.keyEncipherment, true),
    new ExtendedKeyUsageExtension([spec.usage === 'server' ? ExtendedKeyUsage.serverAuth : ExtendedKeyUsage.clientAuth]),
  ];
  if (spec.hosts && spec.hosts.length > 0) {
    out.push(new SubjectAlternativeNameExtension(spec.hosts.map((host): JsonGeneralName => ({ type: isIP(host) ? 'ip' : 'dns', value: host }))));
  }
  return out;
}
