import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import net from 'node:net';
import { embeddedIPv4, ipv6Words, isBlockedAddress } from '../src/net/address-guard.js';
import { HttpSender } from '../src/webhooks/http-sender.js';
import { createHarness, type Harness } from './helpers/harness.js';

/** IPv4 addresses webhooks may not reach, drawn from the refused ranges. */
const privateV4 = fc.oneof(
  fc.tuple(fc.constant(127), fc.nat(255), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.constant(10), fc.nat(255), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.constant(172), fc.integer({ min: 16, max: 31 }), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.constant(192), fc.constant(168), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.constant(169), fc.constant(254), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.constant(100), fc.integer({ min: 64, max: 127 }), fc.nat(255), fc.nat(255)),
  fc.tuple(fc.constant(0), fc.nat(255), fc.nat(255), fc.nat(255)),
);
/** Public unicast IPv4 addresses (outside every refused range). */
const publicV4 = fc
  .tuple(fc.integer({ min: 1, max: 223 }), fc.nat(255), fc.nat(255), fc.nat(255))
  .filter((b) => !isBlockedAddress(b.join('.')));

const hex = (n: number) => n.toString(16);
const words = ([a, b, c, d]: number[]) => [(a << 8) | b, (c << 8) | d];

/** Every IPv6 spelling of an IPv4 address that a relay or translator would carry to it. */
function embeddings(v4: number[]): string[] {
  const [hi, lo] = words(v4);
  const dotted = v4.join('.');
  return [
    `::ffff:${dotted}`,
    `::ffff:${hex(hi)}:${hex(lo)}`,
    `0:0:0:0:0:ffff:${dotted}`,
    `::ffff:0:${dotted}`,
    `64:ff9b::${dotted}`,
    `64:ff9b::${hex(hi)}:${hex(lo)}`,
    `2002:${hex(hi)}:${hex(lo)}::`,
    `2002:${hex(hi)}:${hex(lo)}:1::1`,
    `2001:0:${hex(hi)}:${hex(lo)}::1`, // Teredo server
    `2001::8000:f227:${hex(hi ^ 0xffff)}:${hex(lo ^ 0xffff)}`, // Teredo client (obfuscated)
    `2001:db9::5efe:${dotted}`, // ISATAP interface id
    `::${dotted}`, // IPv4-compatible
    `::${hex(hi)}:${hex(lo)}`,
  ];
}

describe('the SSRF address guard', () => {
  it('reads IPv6 literals to their eight words, like the platform does', () => {
    fc.assert(
      fc.property(fc.ipV6(), (text) => {
        const parsed = ipv6Words(text);
        expect(parsed).toHaveLength(8);
        // The canonical form the platform prints parses to the same words.
        const canonical = new net.SocketAddress({ address: text, family: 'ipv6' }).address;
        expect(ipv6Words(canonical)).toEqual(parsed);
      }),
    );
    expect(ipv6Words('1::2::3')).toBeUndefined();
    expect(ipv6Words('1:2:3:4:5:6:7')).toBeUndefined();
    expect(ipv6Words('::1.2.3.256')).toBeUndefined();
  });

  it('refuses every IPv6 form embedding a private, loopback or link-local IPv4 address (property)', () => {
    fc.assert(
      fc.property(privateV4, fc.boolean(), (v4, upper) => {
        for (const form of embeddings(v4)) {
          const text = upper ? form.toUpperCase() : form;
          expect(isBlockedAddress(text), text).toBe(true);
          expect(isBlockedAddress(`[${text}]`), text).toBe(true);
        }
      }),
    );
    // The probe's example: 6to4 of 127.0.0.1.
    expect(isBlockedAddress('2002:7f00:1::')).toBe(true);
  });

  it('lets the translated forms of public IPv4 addresses through (NAT64, 6to4, Teredo, mapped)', () => {
    fc.assert(
      fc.property(publicV4, publicV4, (v4, server) => {
        const [hi, lo] = words(v4);
        const [shi, slo] = words(server);
        for (const text of [
          `64:ff9b::${v4.join('.')}`,
          `2002:${hex(hi)}:${hex(lo)}::1`,
          `::ffff:${v4.join('.')}`,
          `2001:0:${hex(shi)}:${hex(slo)}:0:0:${hex(hi ^ 0xffff)}:${hex(lo ^ 0xffff)}`,
        ]) {
          expect(isBlockedAddress(text), text).toBe(false);
        }
      }),
    );
    expect(embeddedIPv4(ipv6Words('2606:4700::1111')!)).toEqual([]);
    expect(isBlockedAddress('2606:4700::1111')).toBe(false);
  });

  it('still refuses the IPv6 ranges of its own', () => {
    for (const a of ['::', '::1', 'fe80::1', 'fd00:ec2::254', 'ff02::1', '64:ff9b:1::a00:1', '2001:db8::1', 'not an ip']) {
      expect(isBlockedAddress(a), a).toBe(true);
    }
  });
});

describe('webhook delivery', () => {
  it('refuses IPv6 literals embedding a private IPv4 address before connecting', async () => {
    const sender = new HttpSender({ timeoutMs: 1000, allowPrivate: false });
    try {
      for (const host of ['[2002:7f00:1::]', '[2001:0:4136:e378:8000:63bf:80ff:fffe]', '[::ffff:0:7f00:1]']) {
        const result = await sender.send(`http://${host}/hook`, [], '{}');
        expect(result.statusCode).toBeNull();
        expect(result.error).toMatch(/^refused address/);
      }
    } finally {
      sender.close();
    }
  });
});

describe('webhook registration', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: '0' } });
  });
  afterAll(() => h.close());

  it('refuses URLs whose IPv6 literal embeds a private IPv4 address, and stores nothing', async () => {
    const owner = await h.signUp();
    for (const host of [
      '[2002:7f00:1::]',
      '[2001:0:4136:e378:8000:63bf:80ff:fffe]',
      '[64:ff9b::10.0.0.1]',
      '[::127.0.0.1]',
      '[::ffff:0:a9fe:a9fe]',
    ]) {
      const res = await h.request({ method: 'POST', url: '/v1.3/webhooks', token: owner.access, payload: { url: `http://${host}/hook` } });
      expect(res.statusCode, host).toBe(400);
    }
    const list = await h.request({ method: 'GET', url: '/v1.3/webhooks', token: owner.access });
    expect(list.json()).toEqual([]);
  });
});
