import type { Transporter } from 'nodemailer';
import type { Config } from '../config.js';
import type { Logger } from '../domain/context.js';

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
}

/** Sends e-mail. Resolves once the SMTP server has accepted the message; rejects when it has not. */
export interface Mailer {
  /** `smtp` when mail leaves over SMTP; `log` when it is only written to the log. */
  readonly kind: 'smtp' | 'log';
  send(mail: OutgoingMail): Promise<void>;
}

/**
 * SMTP when PARLEY_SMTP_URL is set; otherwise every message goes to the log at info level, so an
 * installation without mail still works (the operator copies the invitation link from the log).
 */
export function createMailer(config: Config, log: Logger): Mailer {
  if (!config.smtpUrl) {
    return {
      kind: 'log',
      async send(mail) {
        log.info({ mail }, 'e-mail not sent (PARLEY_SMTP_URL is not set); its content follows');
      },
    };
  }
  const url = config.smtpUrl;
  // nodemailer is loaded on the first mail, not at start-up: most processes never send one.
  let transport: Promise<Transporter> | undefined;
  const connect = async () => {
    const { default: nodemailer } = await import('nodemailer');
    return nodemailer.createTransport({
      url,
      // Sending happens inside a request: fail in seconds, not in nodemailer's default minutes.
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
    });
  };
  return {
    kind: 'smtp',
    async send(mail) {
      transport ??= connect();
      await (await transport).sendMail({ from: config.smtpFrom, to: mail.to, subject: mail.subject, text: mail.text });
    },
  };
}
