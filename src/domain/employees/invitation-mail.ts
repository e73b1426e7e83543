import type { Config } from '../../config.js';
import type { OutgoingMail } from '../../mail/mailer.js';

/**
 * The link in an invitation e-mail: `<PARLEY_PUBLIC_URL>/invite?token=...` (the agent app serves
 * that page; the token is what `POST /v1.3/auth/invitation` takes).
 */
export function invitationLink(config: Config, token: string): string {
  const base = (config.publicUrl ?? `http://localhost:${config.port}`).replace(/\/+$/, '');
  return `${base}/invite?${new URLSearchParams({ token })}`;
}

export function invitationMail(opts: {
  to: string;
  link: string;
  accountName: string;
  inviterName: string | null;
  expiresAt: number;
}): OutgoingMail {
  const inviter = opts.inviterName?.trim() || 'The account owner';
  return {
    to: opts.to,
    subject: `Invitation to ${opts.accountName} on Parley`,
    text: [
      'Hello,',
      '',
      `${inviter} invited you to join ${opts.accountName} on Parley.`,
      'Open this link to choose your name and password:',
      '',
      opts.link,
      '',
      `The link works once and expires at ${new Date(opts.expiresAt).toISOString()}.`,
      'If you did not expect this invitation, ignore this message.',
      '',
    ].join('\n'),
  };
}
