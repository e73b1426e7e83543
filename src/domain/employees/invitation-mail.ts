import type { Config } from '../../config.js';
import type { OutgoingMail } from '../../mail/mailer.js';
import { textsOf, type Locale } from '../../i18n/index.js';

/**
 * The link in an invitation e-mail: `<PARLEY_PUBLIC_URL>/invite?token=...` (the agent app serves
 * that page; the token is what `POST /v1.3/auth/invitation` takes).
 */
export function invitationLink(config: Config, token: string): string {
  const base = (config.publicUrl ?? `http://localhost:${config.port}`).replace(/\/+$/, '');
  return `${base}/invite?${new URLSearchParams({ token })}`;
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
  const language = textsOf(opts.locale);
  const texts = language.invitation;
  const expires = new Intl.DateTimeFormat(language.intl, {
    dateStyle: 'long',
    timeStyle: 'short',
    timeZone: 'UTC',
  }).format(new Date(opts.expiresAt));
  const facts = { inviter: opts.inviterName?.trim() || texts.owner, account: opts.accountName, link: opts.link, expires };
  return { to: opts.to, subject: texts.subject(opts.accountName), text: `${texts.body(facts).join('\n')}\n` };
}
