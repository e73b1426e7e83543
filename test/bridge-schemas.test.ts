import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { BRIDGE_SCHEMAS, jsonSchemaDocument, parseBridgeMessage } from '../src/domain/bridge/protocol.js';

/**
 * docs/channels/bridge-schemas/ holds the bridge protocol's JSON Schemas printed from the TypeBox
 * source (src/domain/bridge/protocol.ts). To print them again after a change:
 * `PARLEY_WRITE_BRIDGE_SCHEMAS=1 npx vitest run test/bridge-schemas.test.ts`.
 */
const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'channels', 'bridge-schemas');
const printed = (name: string) => `${JSON.stringify(jsonSchemaDocument(name, BRIDGE_SCHEMAS[name]!), null, 2)}\n`;

if (process.env.PARLEY_WRITE_BRIDGE_SCHEMAS === '1') {
  for (const name of Object.keys(BRIDGE_SCHEMAS)) fs.writeFileSync(path.join(dir, `${name}.json`), printed(name));
}

describe('bridge protocol JSON Schemas', () => {
  it('the committed files are exactly the TypeBox source, one per message, no others', () => {
    const files = fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort();
    expect(files).toEqual(
      Object.keys(BRIDGE_SCHEMAS)
        .map((n) => `${n}.json`)
        .sort(),
    );
    for (const name of Object.keys(BRIDGE_SCHEMAS))
      expect(fs.readFileSync(path.join(dir, `${name}.json`), 'utf8'), name).toBe(printed(name));
  });

  it('the documented examples are valid by the committed files and by the parser', () => {
    const ajv = new Ajv({ strict: false });
    const compiled = new Map<string, ReturnType<Ajv['compile']>>();
    const load = (name: string) => {
      if (!compiled.has(name)) compiled.set(name, ajv.compile(JSON.parse(fs.readFileSync(path.join(dir, `${name}.json`), 'utf8'))));
      return compiled.get(name)!;
    };
    const examples: Array<[string, Record<string, unknown>]> = [
      ['in.hello', { type: 'hello', protocol: 1, client: 'parley-telegram/0.1' }],
      ['in.login.qr', { type: 'login.qr', data: 'tg://login?token=AQID', expiresAt: 1767225600000 }],
      ['in.login.prompt', { type: 'login.prompt', kind: 'password', hint: 'pet' }],
      ['in.session', { type: 'session', state: 'lost', reason: 'AUTH_KEY_UNREGISTERED' }],
      ['in.identity', { type: 'identity', login: 'shop', externalId: '1001' }],
      [
        'in.inbound',
        { type: 'inbound', id: '55', chatId: '77', datetime: 1767225600000, sender: { socialId: '77', name: 'Ann' }, text: 'hi' },
      ],
      ['in.result', { type: 'result', requestId: 3, ok: true, externalIds: ['56'] }],
      ['in.result', { type: 'result', requestId: 4, ok: false, refused: 'USER_IS_BLOCKED' }],
      ['in.status', { type: 'status', messageId: '56', status: 'read' }],
    ];
    for (const [name, example] of examples) {
      expect(load(name)(example), `${name} ${JSON.stringify(example)}`).toBe(true);
      expect(parseBridgeMessage(JSON.stringify(example)).ok).toBe(true);
    }
    expect(load('out.send')({ type: 'send', requestId: 3, deadline: 1767225615000, chatId: '77', text: 'hello' })).toBe(true);
    expect(load('in.result')({ type: 'result', requestId: 4, ok: false })).toBe(false);
    expect(parseBridgeMessage(JSON.stringify({ type: 'inbound', id: '1' })).ok).toBe(false);
  });
});
