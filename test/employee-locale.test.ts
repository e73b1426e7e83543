import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Harness, SignedUp } from './helpers/harness.js';
import { createManager } from './helpers/fixtures.js';
import { createMailHarness, type ReceivedMail } from './helpers/smtp.js';

// `locale` on the employee (docs/api/resources.md "Employee (manager)"): v1.3 only, on both databases.

let h: Harness;
let close: () => Promise<void>;
const inbox: ReceivedMail[] = [];

beforeAll(async () => {
  ({ h, close } = await createMailHarness(inbox));
});
afterAll(() => close());

const put = (token: string, id: number, payload: object, version = 'v1.3') =>
  h.request({ method: 'PUT', url: `/${version}/managers/${id}`, payload, token });
const me = (token: string) => h.request({ method: 'GET', url: '/v1.3/account/me', token });
const listed = async (token: string, id: number, version = 'v1.3') =>
  (await h.request({ method: 'GET', url: `/${version}/managers`, token })).json().find((e: { id: number }) => e.id === id);
const storedLocale = async (id: number) =>
  (await h.database.db.kysely.selectFrom('users').select('locale').where('id', '=', id).executeTakeFirstOrThrow()).locale;

/** Subject and text of the last mail to `address`, decoded from MIME (base64 or quoted-printable, UTF-8). */
function mailTo(address: string): { subject: string; text: string } {
  const mail = inbox.filter((m) => m.to.includes(address)).at(-1);
  if (!mail) throw new Error(`no mail to ${address}`);
  const split = mail.raw.indexOf('\r\n\r\n');
  const head = mail.raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  const body = mail.raw.slice(split + 4);
  const header = (name: string) => new RegExp(`^${name}: (.*)$`, 'mi').exec(head)?.[1] ?? '';
  const qp = (s: string) =>
    Buffer.from(
      s.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
      'latin1',
    );
  const subject = header('Subject')
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?UTF-8\?([BQ])\?([^?]*)\?=/gi, (_m, enc: string, text: string) =>
      (enc.toUpperCase() === 'B' ? Buffer.from(text, 'base64') : qp(text.replace(/_/g, ' '))).toString('utf8'),
    );
  const encoding = header('Content-Transfer-Encoding').toLowerCase();
  const text = (
    encoding === 'base64' ? Buffer.from(body, 'base64') : encoding === 'quoted-printable' ? qp(body) : Buffer.from(body)
  ).toString('utf8');
  return { subject, text };
}

describe('employee locale', () => {
  it('is null until chosen; an employee sets its own, shown in /account/me and /managers', async () => {
    const owner = await h.signUp();
    const manager = await createManager(h, owner);
    expect((await me(manager.access)).json().user.locale).toBeNull();
    const res = await put(manager.access, manager.userId, { locale: 'ru' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: manager.userId, locale: 'ru' });
    expect((await me(manager.access)).json().user.locale).toBe('ru');
    expect(await listed(owner.access, manager.userId)).toMatchObject({ locale: 'ru' });
    expect((await put(owner.access, owner.userId, { locale: 'en' })).json().locale).toBe('en');
  });

  it('the owner changes another employee; a manager may not, nor its own access with it', async () => {
    const owner = await h.signUp();
    const manager = await createManager(h, owner);
    const colleague = await createManager(h, owner);
    expect((await put(owner.access, manager.userId, { locale: 'ru' })).json().locale).toBe('ru');
    const refused = await put(manager.access, colleague.userId, { locale: 'ru' });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().code).toBe('forbidden');
    expect(await storedLocale(colleague.userId)).toBeNull();
    // Its own locale together with its access is the owner's to change.
    expect((await put(manager.access, manager.userId, { locale: 'en', allowAllDeals: true })).statusCode).toBe(403);
    expect(await storedLocale(manager.userId)).toBe('ru');
    expect((await put(manager.access, manager.userId, {})).statusCode).toBe(403);
    // Another account's employee is not found, and stays as it was.
    const other = await h.signUp();
    expect((await put(other.access, manager.userId, { locale: 'en' })).statusCode).toBe(404);
    expect(await storedLocale(manager.userId)).toBe('ru');
  });

  it('an unknown value is 400 naming the allowed ones, and nothing is stored', async () => {
    const owner = await h.signUp();
    const manager = await createManager(h, owner);
    for (const locale of ['xx', '', 'r'.repeat(500), 5, null, 'ru\u0000', ['ru']] as unknown[]) {
      const res = await put(manager.access, manager.userId, { locale });
      expect(res.statusCode, JSON.stringify(locale)).toBe(400);
      expect(res.json().code).toBe('validation_failed');
      expect(res.json().details).toContainEqual({ path: 'body.locale', message: 'must be equal to one of the allowed values: en, ru' });
    }
    // The owner restricting itself is refused whole: the locale sent with it is not kept.
    expect((await put(owner.access, owner.userId, { locale: 'ru', allowAllDeals: false })).statusCode).toBe(400);
    expect(await storedLocale(manager.userId)).toBeNull();
    expect(await storedLocale(owner.userId)).toBeNull();
  });

  for (const version of ['v1.1', 'v1.2']) {
    it(`${version} answers without locale and ignores it in bodies`, async () => {
      const owner = await h.signUp();
      const manager = await createManager(h, owner);
      await put(manager.access, manager.userId, { locale: 'ru' });
      expect(Object.keys(await listed(owner.access, manager.userId, version)).sort()).toEqual([
        'allowAllDeals',
        'confirmed',
        'id',
        'login',
        'name',
        'role',
        'sources',
      ]);
      const mine = (await h.request({ method: 'GET', url: `/${version}/me`, token: manager.access })).json();
      expect(Object.keys(mine.user).sort()).toEqual(['id', 'login', 'metadata', 'name', 'role']);
      // Before v1.3 the route stays the owner's, and `locale` is an unknown field.
      expect((await put(manager.access, manager.userId, { locale: 'en' }, version)).statusCode).toBe(403);
      const byOwner = await put(owner.access, manager.userId, { locale: 'en', allowAllDeals: true }, version);
      expect(byOwner.statusCode).toBe(200);
      expect(byOwner.json().locale).toBeUndefined();
      expect(await storedLocale(manager.userId)).toBe('ru');
    });
  }
});

describe('invitation e-mail language', () => {
  const invite = (owner: SignedUp, body: object) =>
    h.request({ method: 'POST', url: '/v1.3/managers', payload: body, token: owner.access });
  let n = 0;
  const address = () => `locale-invitee${++n}-${Math.random().toString(36).slice(2, 7)}@example.com`;

  it("follows the inviter's locale unless the invitation names one; the invitee keeps it", async () => {
    const owner = await h.signUp(undefined, undefined, 'Ольга');
    await put(owner.access, owner.userId, { locale: 'ru' });

    const russian = address();
    const res = await invite(owner, { login: russian });
    expect(res.statusCode).toBe(200);
    expect(res.json().find((e: { login: string }) => e.login === russian).locale).toBe('ru');
    const ru = mailTo(russian);
    expect(ru.subject).toBe('Приглашение в Ольга в Parley');
    expect(ru.text).toContain('Ольга приглашает вас');
    expect(ru.text).not.toMatch(/invited|expires/);

    const english = address();
    expect((await invite(owner, { login: english, locale: 'en' })).json().find((e: { login: string }) => e.login === english).locale).toBe(
      'en',
    );
    expect(mailTo(english).subject).toBe('Invitation to Ольга on Parley');
    expect(mailTo(english).text).toContain('Ольга invited you');
  });

  it('an unknown locale in an invitation is 400 and invites nobody', async () => {
    const owner = await h.signUp();
    const login = address();
    const res = await invite(owner, { login, locale: 'de' });
    expect(res.statusCode).toBe(400);
    expect(inbox.some((m) => m.to.includes(login))).toBe(false);
    expect(await h.database.db.kysely.selectFrom('users').select('id').where('login', '=', login).executeTakeFirst()).toBeUndefined();
  });
});
