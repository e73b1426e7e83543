import dns from 'node:dns';
import net from 'node:net';

/**
 * SSRF protection: webhook targets may not be loopback, private, link-local, metadata,
 * carrier-grade NAT, multicast, reserved or unspecified addresses, nor IPv6 forms embedding such an
 * IPv4 address (mapped, translated, NAT64, 6to4, Teredo, ISATAP). Checked at
 * registration (literal IPs and every address a hostname resolves to) and again when delivering,
 * on the very addresses the socket connects to (see `guardedLookup`), so DNS rebinding cannot slip
 * a private address in between.
 */
const BLOCKED = new net.BlockList();
for (const [net4, prefix] of [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  BLOCKED.addSubnet(net4, prefix, 'ipv4');
}
for (const [net6, prefix] of [
  ['::', 96], // unspecified, loopback and IPv4-compatible (deprecated)
  ['::1', 128],
  ['64:ff9b:1::', 48], // NAT64 local use (RFC 8215): a network's own translation, IPv4 place unknown
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local (includes AWS metadata fd00:ec2::254)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  BLOCKED.addSubnet(net6, prefix, 'ipv6');
}

/** True when `address` (a literal IPv4 or IPv6 address) is one webhooks may not reach. */
export function isBlockedAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = net.isIP(bare);
  if (family === 4) return BLOCKED.check(bare, 'ipv4');
  if (family !== 6) return true;
  const words = ipv6Words(bare);
  if (!words) return true;
  // IPv6 forms that carry an IPv4 address reach it through a relay or translator: judge the IPv4
  // inside, so that 6to4 of loopback or Teredo of a private address is refused like the address.
  for (const v4 of embeddedIPv4(words)) if (BLOCKED.check(v4, 'ipv4')) return true;
  return BLOCKED.check(bare, 'ipv6');
}

/**
 * The IPv4 addresses an IPv6 address embeds: IPv4-mapped `::ffff:a.b.c.d` and IPv4-translated
 * `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4 `2002:aabb:ccdd::/48`, Teredo
 * `2001:0:<server>:<flags>:<port>:<client XOR ffffffff>` (server and client), and ISATAP
 * interface ids `…:0:5efe:a.b.c.d` / `…:200:5efe:a.b.c.d`. IPv4-compatible `::a.b.c.d` is in
 * the blocked `::/96` already, as is NAT64's local-use `64:ff9b:1::/48`.
 */
export function embeddedIPv4(words: number[]): string[] {
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const out: string[] = [];
  const zeroUpTo = (n: number) => words.slice(0, n).every((w) => w === 0);
  if (zeroUpTo(5) && words[5] === 0xffff) out.push(v4(words[6], words[7]));
  if (zeroUpTo(4) && words[4] === 0xffff && words[5] === 0) out.push(v4(words[6], words[7]));
  if (words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((w) => w === 0)) out.push(v4(words[6], words[7]));
  if (words[0] === 0x2002) out.push(v4(words[1], words[2]));
  if (words[0] === 0x2001 && words[1] === 0) out.push(v4(words[2], words[3]), v4(words[6] ^ 0xffff, words[7] ^ 0xffff));
  if ((words[4] === 0 || words[4] === 0x200) && words[5] === 0x5efe) out.push(v4(words[6], words[7]));
  return out;
}

/** The eight 16-bit words of a literal IPv6 address (`::` expanded, a dotted IPv4 tail read), or undefined. */
export function ipv6Words(text: string): number[] | undefined {
  let head = text;
  const tail: number[] = [];
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const bytes = dotted[2].split('.').map(Number);
    if (bytes.some((b) => b > 255)) return undefined;
    head = dotted[1].endsWith('::') ? dotted[1] : dotted[1].slice(0, -1);
    tail.push((bytes[0] << 8) | bytes[1], (bytes[2] << 8) | bytes[3]);
  }
  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((h) => (/^[0-9a-f]{1,4}$/i.test(h) ? parseInt(h, 16) : NaN)));
  const left = parse(halves[0]);
  const right = [...(halves.length === 2 ? parse(halves[1]) : []), ...tail];
  const missing = 8 - left.length - right.length;
  if (halves.length === 1 && missing !== 0) return undefined;
  if (halves.length === 2 && missing < 1) return undefined;
  const words = [...left, ...Array<number>(Math.max(missing, 0)).fill(0), ...right];
  return words.length === 8 && words.every((w) => Number.isInteger(w)) ? words : undefined;
}

export class BlockedAddressError extends Error {
  readonly code = 'EWEBHOOKBLOCKED';
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(`${host} resolves to a refused address (${address})`);
  }
}

/** Every address `host` resolves to; throws BlockedAddressError when any is refused. */
export async function checkHost(host: string): Promise<void> {
  const bare = host.replace(/^\[|\]$/g, '');
  if (net.isIP(bare)) {
    if (isBlockedAddress(bare)) throw new BlockedAddressError(host, bare);
    return;
  }
  const addresses = await dns.promises.lookup(bare, { all: true, verbatim: true });
  for (const a of addresses) if (isBlockedAddress(a.address)) throw new BlockedAddressError(host, a.address);
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http(s) agents: resolves every address, refuses the host when any is blocked,
 * and hands the checked addresses to the socket, so the connection goes where the check looked.
 */
export function guardedLookup(hostname: string, options: dns.LookupOptions, callback: LookupCallback): void {
  dns.lookup(hostname, { all: true, verbatim: true, family: options.family }, (err, addresses) => {
    if (err) return callback(err, []);
    const bad = addresses.find((a) => isBlockedAddress(a.address));
    if (bad) return callback(new BlockedAddressError(hostname, bad.address) as unknown as NodeJS.ErrnoException, []);
    if (options.all) return callback(null, addresses);
    const first = addresses[0];
    if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
    return callback(null, first.address, first.family);
  });
}
