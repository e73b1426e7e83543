import fs from 'node:fs';
import https from 'node:https';
import tls from 'node:tls';
import type { Config } from '../config.js';
import { INSTALLATION_HEADER } from '../api/routes/system.routes.js';
import { fail, pass, reason, redactUrl, skip, type CheckResult } from './check.js';

/** Errors that mean "nothing answered from here", not "something answered wrongly". */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'ECONNRESET']);

const URL_FIX =
  'set PARLEY_PUBLIC_URL=https://<your domain> (the address of the reverse proxy, docs/deploy.md, "HTTPS") and restart Parley';

/**
 * PARLEY_PUBLIC_URL: set, https, and answering `GET /health` with this installation's id (read from
 * the database meanwhile; undefined when it could not be). When
 * nothing answers from this machine (a firewall, DNS seen differently inside) the fetch is skipped,
 * and said so: the providers reach it from outside.
 */
export async function checkPublicUrl(
  config: Config,
  env: NodeJS.ProcessEnv,
  installation: Promise<string | undefined>,
  timeoutMs: number,
): Promise<CheckResult> {
  const name = 'public-url';
  const title = 'Public URL';
  const raw = config.publicUrl;
  if (!raw) {
    return fail(
      name,
      title,
      "PARLEY_PUBLIC_URL is not set: providers' webhooks (WhatsApp, Messenger, Instagram, Viber, VK, OK) cannot reach Parley",
      URL_FIX,
    );
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return fail(name, title, 'PARLEY_PUBLIC_URL is not a URL', URL_FIX);
  }
  const shown = redactUrl(raw);
  if (url.protocol !== 'https:') {
    return fail(name, title, `${shown} is not https: the providers send webhooks only to https addresses`, URL_FIX);
  }
  if (/(^|\.)example\.(com|net|org)$/.test(url.hostname)) {
    return fail(name, title, `${shown} is still the example's address`, URL_FIX);
  }
  const health = new URL('health', url.href.endsWith('/') ? url.href : `${url.href}/`);
  let answer: { status: number; installation: string | undefined; location: string | undefined };
  try {
    answer = await getHealth(health, extraCa(env), timeoutMs);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    if (UNREACHABLE.has(code) || code === 'TIMEOUT') {
      return skip(
        name,
        title,
        `${shown} is https, but not reachable from this machine (${code === 'TIMEOUT' ? `no answer in ${timeoutMs} ms` : code}); check from outside: curl -sI ${health.href}`,
      );
    }
    return fail(
      name,
      title,
      `${health.href}: ${reason(err)}`,
      'the proxy needs a valid certificate for this domain: with Caddy, point the domain at this server and open ports 80 and 443 (journalctl -u caddy)',
    );
  }
  if (answer.status !== 200) {
    const where = answer.location ? ` (to ${answer.location})` : '';
    return fail(
      name,
      title,
      `${health.href} answered ${answer.status}${where}`,
      "the reverse proxy must pass every path to Parley's port (deploy/Caddyfile, deploy/nginx-parley.conf)",
    );
  }
  if (!answer.installation) {
    return fail(
      name,
      title,
      `${health.href} answers, but not as a Parley of this version (no ${INSTALLATION_HEADER} header)`,
      'point the domain and the proxy at this installation',
    );
  }
  const ours = await installation;
  if (ours && answer.installation !== ours) {
    return fail(
      name,
      title,
      `${health.href} answers as another Parley installation (${answer.installation}; this one is ${ours})`,
      'point the domain and the proxy at this installation, or run doctor with the environment of the one the domain serves',
    );
  }
  const compared = ours ? 'this installation' : 'a Parley installation (not compared: the database was not read)';
  return pass(name, title, `${health.href} answers as ${compared}`);
}

/** NODE_EXTRA_CA_CERTS of the checked environment, trusted beside the system's authorities. */
function extraCa(env: NodeJS.ProcessEnv): string[] | undefined {
  const file = env.NODE_EXTRA_CA_CERTS;
  if (!file) return undefined;
  try {
    return [...tls.rootCertificates, fs.readFileSync(file, 'utf8')];
  } catch {
    return undefined;
  }
}

function getHealth(
  url: URL,
  ca: string[] | undefined,
  timeoutMs: number,
): Promise<{ status: number; installation: string | undefined; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca, timeout: timeoutMs, headers: { accept: 'application/json' } }, (res) => {
      const header = res.headers[INSTALLATION_HEADER];
      res.resume();
      resolve({
        status: res.statusCode ?? 0,
        installation: typeof header === 'string' ? header : undefined,
        location: res.headers.location,
      });
      req.destroy();
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
    req.on('error', reject);
  });
}

/** The SMTP server of PARLEY_SMTP_URL answers and accepts the credentials (nodemailer's verify). */
export async function checkSmtp(config: Config, timeoutMs: number): Promise<CheckResult> {
  const title = 'SMTP';
  if (!config.smtpUrl) return skip('smtp', title, 'PARLEY_SMTP_URL is not set: invitation e-mails are written to the log');
  const shown = redactUrl(config.smtpUrl);
  const { default: nodemailer } = await import('nodemailer');
  const transport = nodemailer.createTransport({
    url: config.smtpUrl,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    dnsTimeout: timeoutMs,
  });
  try {
    await transport.verify();
    return pass('smtp', title, `${shown} answers and accepts the login`);
  } catch (err) {
    return fail(
      'smtp',
      title,
      `${shown}: ${reason(err)}`,
      'check PARLEY_SMTP_URL (host, port, user, password); hosting providers often block port 25: use 587 (smtp://) or 465 (smtps://)',
    );
  } finally {
    transport.close();
  }
}
