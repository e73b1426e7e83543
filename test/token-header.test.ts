import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { tokenFromHeader } from '../src/domain/auth/token-signer.js';

// docs/api/auth.md: `Bearer <jwt>` with the scheme in any case, `JWT <jwt>`, or the bare `<jwt>`.
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.split('');
const segment = fc.string({ unit: fc.constantFrom(...B64URL), minLength: 1, maxLength: 60 });
const jwt = fc.tuple(segment, segment, segment).map((parts) => parts.join('.'));
const blank = fc.string({ unit: fc.constantFrom(' ', '\t'), minLength: 1, maxLength: 4 });
const optionalBlank = fc.string({ unit: fc.constantFrom(' ', '\t'), maxLength: 3 });
/** A scheme word in random letter case. */
const anyCase = (word: string) =>
  fc
    .array(fc.boolean(), { minLength: word.length, maxLength: word.length })
    .map((upper) => [...word].map((c, i) => (upper[i] ? c.toUpperCase() : c.toLowerCase())).join(''));
const scheme = fc.oneof(fc.constantFrom('Bearer', 'bearer', 'BEARER', 'JWT', 'jwt'), anyCase('bearer'), anyCase('jwt'));
const isKnownScheme = (s: string) => /^(bearer|jwt)$/i.test(s);
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

describe('tokenFromHeader', () => {
  it('accepts any three base64url segments joined by dots, bare', () => {
    fc.assert(
      fc.property(jwt, (token) => {
        expect(tokenFromHeader(token)).toBe(token);
      }),
    );
  });

  it('accepts Bearer (any case) and JWT followed by whitespace, with blanks around the header', () => {
    fc.assert(
      fc.property(optionalBlank, scheme, blank, jwt, optionalBlank, (before, s, gap, token, after) => {
        expect(tokenFromHeader(`${before}${s}${gap}${token}${after}`)).toBe(token);
      }),
    );
  });

  it('refuses a token with a space inside it', () => {
    fc.assert(
      fc.property(fc.option(scheme, { nil: undefined }), jwt, fc.nat(), (s, token, at) => {
        const cut = 1 + (at % (token.length - 1));
        const broken = `${token.slice(0, cut)} ${token.slice(cut)}`;
        // Without a scheme, "jwt x.y.z" is a JWT-scheme header of a good token: not a broken one.
        fc.pre(s !== undefined || !isKnownScheme(token.slice(0, cut)));
        expect(tokenFromHeader(s ? `${s} ${broken}` : broken)).toBeUndefined();
      }),
    );
  });

  it('refuses other schemes', () => {
    const word = fc.string({
      unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'.split('')),
      minLength: 1,
      maxLength: 12,
    });
    const otherScheme = fc.oneof(fc.constantFrom('Basic', 'Token', 'Digest', 'Bearer:', 'Bearer=', 'Bearerx', 'JWTs', 'OAuth'), word);
    fc.assert(
      fc.property(otherScheme, blank, jwt, (s, gap, token) => {
        fc.pre(!isKnownScheme(s));
        expect(tokenFromHeader(`${s}${gap}${token}`)).toBeUndefined();
      }),
    );
  });

  it('refuses two schemes, and a scheme joined to the token by punctuation', () => {
    // (A scheme glued to the token, "Bearerab.c.d", is itself a well-formed bare token: verification,
    // not this parser, refuses it.)
    fc.assert(
      fc.property(scheme, scheme, fc.constantFrom(':', '=', ',', ';'), jwt, (s, t, glue, token) => {
        expect(tokenFromHeader(`${s} ${t} ${token}`)).toBeUndefined();
        expect(tokenFromHeader(`${s}${glue}${token}`)).toBeUndefined();
        expect(tokenFromHeader(`${s}${glue} ${token}`)).toBeUndefined();
      }),
    );
  });

  it('refuses two or four segments, and empty segments', () => {
    fc.assert(
      fc.property(fc.option(scheme, { nil: undefined }), segment, segment, segment, segment, (s, a, b, c, d) => {
        const prefix = s ? `${s} ` : '';
        for (const bad of [`${a}.${b}`, `${a}.${b}.${c}.${d}`, `${a}..${c}`, `.${b}.${c}`, `${a}.${b}.`]) {
          expect(tokenFromHeader(prefix + bad), prefix + bad).toBeUndefined();
        }
      }),
    );
  });

  it('refuses empty and blank input, and a scheme alone', () => {
    expect(tokenFromHeader(undefined)).toBeUndefined();
    expect(tokenFromHeader('')).toBeUndefined();
    fc.assert(
      fc.property(optionalBlank, (b) => {
        expect(tokenFromHeader(b)).toBeUndefined();
      }),
    );
    fc.assert(
      fc.property(scheme, optionalBlank, (s, b) => {
        expect(tokenFromHeader(`${s}${b}`)).toBeUndefined();
      }),
    );
  });

  it('on arbitrary input answers undefined or a well-formed token that the header contains', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string({ unit: 'grapheme-ascii' }),
          fc.tuple(scheme, fc.string()).map(([s, r]) => `${s} ${r}`),
        ),
        (header) => {
          const token = tokenFromHeader(header);
          if (token === undefined) return;
          expect(token).toMatch(JWT_SHAPE);
          expect(header.trim().endsWith(token)).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });
});
