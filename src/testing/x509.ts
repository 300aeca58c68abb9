/**
 * A tiny certificate authority for the test control plane (envtest's "TinyCA"), written with
 * node:crypto alone: Node can make keys and sign bytes but has no certificate builder, so this
 * module DER-encodes the few X.509 v3 fields Kubernetes needs.
 *
 * Guarantees: certificates are ECDSA P-256 / SHA-256, parse with `crypto.X509Certificate`,
 * verify against their issuer, and carry the fields Kubernetes reads — subject CN (the user
 * name), one O per group (the groups), SANs for serving certificates, key usage and extended
 * key usage (serverAuth or clientAuth), basic constraints for the CA. Nothing here does I/O.
 */
import { createPrivateKey, generateKeyPairSync, randomBytes, sign, X509Certificate } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { isIP } from 'node:net';

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

/** Makes a self-signed CA certificate. */
export function createCertificateAuthority(commonName: string, now: Date = new Date()): KeyPair {
  const { privateKey, publicKey } = newKey();
  const cert = buildCertificate({ commonName, usage: 'ca', now }, publicKey, privateKey, [rdn(OID.commonName, commonName)]);
  return { certPem: toPem('CERTIFICATE', cert), keyPem: exportKey(privateKey) };
}

/** Makes a certificate for `spec`, signed by `issuer`. */
export function issueCertificate(issuer: KeyPair, spec: CertificateSpec): KeyPair {
  const issuerCert = new X509Certificate(issuer.certPem);
  const issuerKey = createPrivateKey(issuer.keyPem);
  const issuerName = parseIssuerName(issuerCert);
  const { privateKey, publicKey } = newKey();
  const cert = buildCertificate(spec, publicKey, issuerKey, issuerName);
  return { certPem: toPem('CERTIFICATE', cert), keyPem: exportKey(privateKey) };
}

function newKey(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
}

function exportKey(key: KeyObject): string {
  return key.export({ type: 'pkcs8', format: 'pem' }).toString();
}

/** The issuer's subject as DER RDNs. Our CAs only ever have a CN. */
function parseIssuerName(cert: X509Certificate): Buffer[] {
  const cn = /^CN=(.*)$/m.exec(cert.subject)?.[1];
  if (!cn) throw new Error(`issuer certificate has no CN (subject "${cert.subject}"); use a CA made by createCertificateAuthority()`);
  return [rdn(OID.commonName, cn)];
}

const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

function buildCertificate(spec: CertificateSpec, subjectKey: KeyObject, signingKey: KeyObject, issuer: Buffer[]): Buffer {
  const now = spec.now ?? new Date();
  const notBefore = new Date(now.getTime() - 60 * 60 * 1000); // tolerate clock skew
  const notAfter = new Date(now.getTime() + (spec.validDays ?? 3650) * 24 * 60 * 60 * 1000);
  const subject = [rdn(OID.commonName, spec.commonName), ...(spec.organizations ?? []).map((o) => rdn(OID.organization, o))];
  const algorithm = seq(oid(OID.ecdsaWithSha256));
  const tbs = seq(
    tlv(0xa0, integer(Buffer.from([2]))), // v3
    integer(serialNumber()),
    algorithm,
    seq(...issuer),
    seq(time(notBefore), time(notAfter)),
    seq(...subject),
    subjectKey.export({ type: 'spki', format: 'der' }),
    tlv(0xa3, seq(...extensions(spec))),
  );
  const signature = sign('sha256', tbs, signingKey); // DER ECDSA-Sig-Value
  return seq(tbs, algorithm, bitString(signature, 0));
}

function extensions(spec: CertificateSpec): Buffer[] {
  if (spec.usage === 'ca') {
    return [
      extension(OID.basicConstraints, true, seq(boolean(true))),
      // digitalSignature | keyCertSign | cRLSign
      extension(OID.keyUsage, true, keyUsageBits(0x86)),
    ];
  }
  const out = [
    extension(OID.basicConstraints, true, seq()),
    // digitalSignature | keyEncipherment
    extension(OID.keyUsage, true, keyUsageBits(0xa0)),
    extension(OID.extKeyUsage, false, seq(oid(spec.usage === 'server' ? OID.serverAuth : OID.clientAuth))),
  ];
  if (spec.hosts && spec.hosts.length > 0) {
    out.push(extension(OID.subjectAltName, false, seq(...spec.hosts.map(generalName))));
  }
  return out;
}

function generalName(host: string): Buffer {
  const family = isIP(host);
  if (family === 4) return tlv(0x87, Buffer.from(host.split('.').map(Number)));
  if (family === 6) return tlv(0x87, ipv6Bytes(host));
  return tlv(0x82, Buffer.from(host, 'ascii'));
}

function ipv6Bytes(address: string): Buffer {
  const [head = '', tail = ''] = address.split('::');
  const parts = (s: string) => (s ? s.split(':') : []);
  const h = parts(head);
  const t = address.includes('::') ? parts(tail) : [];
  const groups = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => {
    out.writeUInt16BE(parseInt(g, 16), i * 2);
  });
  return out;
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? seq(oid(id), boolean(true), octetString(value)) : seq(oid(id), octetString(value));
}

function keyUsageBits(byte: number): Buffer {
  let unused = 0;
  while (unused < 8 && ((byte >> unused) & 1) === 0) unused++;
  return bitString(Buffer.from([byte]), unused);
}

function serialNumber(): Buffer {
  const bytes = randomBytes(16);
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x40; // positive, no leading zero byte
  return bytes;
}

function rdn(type: string, value: string): Buffer {
  return tlv(0x31, seq(oid(type), tlv(0x0c, Buffer.from(value, 'utf8'))));
}

function time(date: Date): Buffer {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 19).replace(/[-T:]/g, '');
  return date.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(`${digits.slice(2)}Z`, 'ascii'))
    : tlv(0x18, Buffer.from(`${digits}Z`, 'ascii'));
}

// --- DER primitives ---------------------------------------------------------------------

/** DER tag-length-value. Exported for unit tests. */
export function tlv(tag: number, value: Buffer): Buffer {
  const n = value.length;
  let length: Buffer;
  if (n < 0x80) length = Buffer.from([n]);
  else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    length = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), length, value]);
}

function seq(...items: Buffer[]): Buffer {
  return tlv(0x30, Buffer.concat(items));
}

function integer(bytes: Buffer): Buffer {
  return tlv(0x02, (bytes[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
}

function boolean(value: boolean): Buffer {
  return tlv(0x01, Buffer.from([value ? 0xff : 0]));
}

function octetString(value: Buffer): Buffer {
  return tlv(0x04, value);
}

function bitString(value: Buffer, unusedBits: number): Buffer {
  return tlv(0x03, Buffer.concat([Buffer.from([unusedBits]), value]));
}

/** DER OBJECT IDENTIFIER from dotted form. Exported for unit tests. */
export function oid(dotted: string): Buffer {
  const [a = 0, b = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [a * 40 + b];
  for (const arc of rest) {
    const chunk = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

function toPem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}
