import type { Config } from '../../config.js';
import type { OutgoingMail } from '../../mail/mailer.js';
import type { Locale } from '../users/users.types.js';

/**
 * The link in an invitation e-mail: `<PARLEY_PUBLIC_URL>/invite?token=...` (the agent app serves
 * that page; the token is what `POST /v1.3/auth/invitation` takes).
 */
export function invitationLink(config: Config, token: string): string {
  const base = (config.publicUrl ?? `http://localhost:${config.port}`).replace(/\/+$/, '');
  return `${base}/invite?${new URLSearchParams({ token })}`;
}

const TEXTS = {
  en: {
    subject: (account: string) => `Invitation to ${account} on Parley`,
    owner: 'The account owner',
    body: (o: MailFacts) => [
      'Hello,',
      '',
      `${o.inviter} invited you to join ${o.account} on Parley.`,
      'Open this link to choose your name and password:',
      '',
      o.link,
      '',
      `The link works once and expires on ${o.expires} (UTC).`,
      'If you did not expect this invitation, ignore this message.',
    ],
  },
  ru: {
    subject: (account: string) => `Приглашение в ${account} в Parley`,
    owner: 'Владелец аккаунта',
    body: (o: MailFacts) => [
      'Здравствуйте!',
      '',
      `${o.inviter} приглашает вас в команду ${o.account} в Parley.`,
      'Откройте ссылку, чтобы указать имя и пароль:',
      '',
      o.link,
      '',
      `Ссылка работает один раз и действует до ${o.expires} (UTC).`,
      'Если вы не ждали этого приглашения, просто не отвечайте на письмо.',
    ],
  },
} satisfies Record<Locale, unknown>;

interface MailFacts {
  inviter: string;
  account: string;
  link: string;
  expires: string;
}

/** The invitation e-mail in the invitee's language (docs/api/resources.md "Employee (manager)"). */
export function invitationMail(opts: {
  to: string;
  link: string;
  accountName: string;
  inviterName: string | null;
  expiresAt: number;
  locale: Locale;
}): OutgoingMail {
  const texts = TEXTS[opts.locale];
  const expires = new Intl.DateTimeFormat(opts.locale === 'ru' ? 'ru-RU' : 'en-GB', {
    dateStyle: 'long',
    timeStyle: 'short',
    timeZone: 'UTC',
  }).format(new Date(opts.expiresAt));
  const facts = { inviter: opts.inviterName?.trim() || texts.owner, account: opts.accountName, link: opts.link, expires };
  return { to: opts.to, subject: texts.subject(opts.accountName), text: `${texts.body(facts).join('\n')}\n` };
}
