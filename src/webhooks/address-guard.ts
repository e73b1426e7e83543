import dns from 'node:dns';
import net from 'node:net';

/**
 * SSRF protection (decisions.md §7): webhook targets may not be loopback, private, link-local,
 * metadata, carrier-grade NAT, multicast, reserved or unspecified addresses. Checked at
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
  ['64:ff9b::', 96], // NAT64 of IPv4 (may reach private v4)
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
  // IPv4-mapped IPv6 (::ffff:127.0.0.1, ::ffff:7f00:1): judge the IPv4 inside.
  const mapped = /^(?:0{0,4}:){0,4}:?ffff:(.+)$/i.exec(bare);
  if (mapped) {
    const v4 = mapped[1].includes('.') ? mapped[1] : hexToV4(mapped[1]);
    return v4 && net.isIPv4(v4) ? BLOCKED.check(v4, 'ipv4') : true;
  }
  return BLOCKED.check(bare, 'ipv6');
}

function hexToV4(hex: string): string | undefined {
  const parts = hex.split(':');
  if (parts.length !== 2) return undefined;
  const [a, b] = parts.map((p) => parseInt(p, 16));
  if (Number.isNaN(a) || Number.isNaN(b)) return undefined;
  return `${a >> 8}.${a & 255}.${b >> 8}.${b & 255}`;
}

export class BlockedAddressError extends Error {
  readonly code = 'EWEBHOOKBLOCKED';
  constructor(readonly host: string, readonly address: string) {
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
