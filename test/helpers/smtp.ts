import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { createHarness, type Harness } from './harness.js';

export interface ReceivedMail {
  to: string[];
  raw: string;
}

/** A real SMTP peer on loopback: what Parley sends is what a mail server would receive. */
export async function startSmtp(inbox: ReceivedMail[]): Promise<{ server: SMTPServer; port: number }> {
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      let raw = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => (raw += chunk));
      stream.on('end', () => {
        inbox.push({ to: session.envelope.rcptTo.map((r) => r.address), raw });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.server.address() as AddressInfo).port };
}

/** The message body as text: quoted-printable soft breaks joined and escapes decoded. */
export function decodeBody(raw: string): string {
  const body = raw.slice(raw.indexOf('\r\n\r\n') + 4);
  return body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/**
 * A harness whose mail goes to a real SMTP peer on loopback, collected in `inbox`; `close` stops
 * both.
 */
export async function createMailHarness(
  inbox: ReceivedMail[],
  env: Record<string, string> = {},
): Promise<{ h: Harness; close: () => Promise<void> }> {
  const started = await startSmtp(inbox);
  const h = await createHarness({
    env: { PARLEY_SMTP_URL: `smtp://127.0.0.1:${started.port}`, PARLEY_SMTP_FROM: 'Parley <noreply@parley.test>', ...env },
  });
  return {
    h,
    close: async () => {
      await h.close();
      await new Promise<void>((resolve) => started.server.close(() => resolve()));
    },
  };
}
