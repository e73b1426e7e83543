import path from 'node:path';
import { parseArgs } from 'node:util';

export const BRIDGE_USAGE = `  bridge telegram --url <parley URL> --integration <id> --token <bridge token>
                  --api-id <id> --api-hash <hash> [--session <file>] [--login qr|phone]
                              serve a Telegram user account (msgrb_personal) to Parley through the
                              account bridge (docs/channels/bridge.md); the token may be given as
                              PARLEY_BRIDGE_TOKEN, the API id/hash (my.telegram.org) as
                              TELEGRAM_API_ID / TELEGRAM_API_HASH
  bridge whatsapp --url <parley URL> --integration <id> --token <bridge token> --accept-risk
                  [--session-dir <folder>]
                              serve a WhatsApp account (msgra, msgra2) as a linked device (Baileys);
                              WhatsApp's terms forbid unofficial clients and the account can be
                              banned: --accept-risk says you know. The session is kept in
                              --session-dir (default PARLEY_DATA_DIR/whatsapp-<id>, PARLEY_DATA_DIR
                              defaulting to ./data)`;

/** What `parley bridge whatsapp` says when the optional package is not installed. */
export const BAILEYS_MISSING = `the WhatsApp connector needs the optional package "baileys", which is not installed.
Install it in Parley's folder with \`npm install\` (or \`npm ci\`) without --omit=optional; package.json pins
baileys and replaces its GitHub-hosted libsignal with libsignal@6.0.0 from the npm registry (GPL-3.0:
see docs/channels/bridge.md, "Licence")`;

const WHATSAPP_RISK = `parley: the WhatsApp connector needs --accept-risk.
WhatsApp's terms of service forbid unofficial clients; an account linked through this connector
can be limited or banned by WhatsApp, especially when it writes first to many people. Use an
account you can afford to lose (docs/channels/bridge.md). Start again with --accept-risk to go on.`;

/** `parley bridge <connector> ...`: runs a connector until its bridge closes for good. Needs no database. */
export async function runBridgeCli(args: string[], env: NodeJS.ProcessEnv, out: Pick<Console, 'log' | 'error'>): Promise<number> {
  const [connector, ...rest] = args;
  if (connector === 'whatsapp') return runWhatsApp(rest, env, out);
  if (connector !== 'telegram') {
    out.error(`parley: unknown connector "${connector ?? ''}" (shipped: telegram, whatsapp)\n\nUsage:\n${BRIDGE_USAGE}`);
    return 1;
  }
  let values: {
    url?: string;
    integration?: string;
    token?: string;
    'api-id'?: string;
    'api-hash'?: string;
    session?: string;
    login?: string;
  };
  try {
    ({ values } = parseArgs({
      args: rest,
      options: {
        url: { type: 'string' },
        integration: { type: 'string' },
        token: { type: 'string' },
        'api-id': { type: 'string' },
        'api-hash': { type: 'string' },
        session: { type: 'string' },
        login: { type: 'string' },
      },
    }));
  } catch (err) {
    out.error(`parley: ${(err as Error).message}`);
    return 1;
  }
  const token = values.token ?? env.PARLEY_BRIDGE_TOKEN;
  const apiId = values['api-id'] ?? env.TELEGRAM_API_ID;
  const apiHash = values['api-hash'] ?? env.TELEGRAM_API_HASH;
  const problems = [
    !values.url || !/^(https?|wss?):\/\//.test(values.url) ? '--url must be the http(s) address of Parley' : '',
    !values.integration || !/^\d{1,15}$/.test(values.integration) ? '--integration must be the integration id' : '',
    !token ? '--token (or PARLEY_BRIDGE_TOKEN) is required' : '',
    !apiId || !/^\d+$/.test(apiId) ? '--api-id (or TELEGRAM_API_ID) must be the numeric API id from my.telegram.org' : '',
    !apiHash ? '--api-hash (or TELEGRAM_API_HASH) is required' : '',
    values.login !== undefined && values.login !== 'qr' && values.login !== 'phone' ? '--login must be qr or phone' : '',
  ].filter(Boolean);
  // (The second half repeats checks above, for the compiler: each of these is a problem listed.)
  if (problems.length || !values.url || !token || !apiHash) {
    out.error(`parley: ${problems.join('; ')}\n\nUsage:\n${BRIDGE_USAGE}`);
    return 1;
  }
  const { runTelegramConnector } = await import('./telegram/telegram-connector.js');
  const integrationId = Number(values.integration);
  out.log(
    await runTelegramConnector({
      url: values.url,
      integrationId,
      token,
      apiId: Number(apiId),
      apiHash,
      session: values.session ?? `telegram-${integrationId}.session`,
      login: (values.login as 'qr' | 'phone' | undefined) ?? 'qr',
      log: (message) => out.error(`parley bridge telegram: ${message}`),
    }),
  );
  return 0;
}

async function runWhatsApp(args: string[], env: NodeJS.ProcessEnv, out: Pick<Console, 'log' | 'error'>): Promise<number> {
  let values: { url?: string; integration?: string; token?: string; 'session-dir'?: string; 'accept-risk'?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        url: { type: 'string' },
        integration: { type: 'string' },
        token: { type: 'string' },
        'session-dir': { type: 'string' },
        'accept-risk': { type: 'boolean' },
      },
    }));
  } catch (err) {
    out.error(`parley: ${(err as Error).message}`);
    return 1;
  }
  if (!values['accept-risk']) {
    out.error(WHATSAPP_RISK);
    return 1;
  }
  const { url, integration } = values;
  const token = values.token ?? env.PARLEY_BRIDGE_TOKEN;
  const problems = [
    !url || !/^(https?|wss?):\/\//.test(url) ? '--url must be the http(s) address of Parley' : '',
    !integration || !/^\d{1,15}$/.test(integration) ? '--integration must be the integration id' : '',
    !token ? '--token (or PARLEY_BRIDGE_TOKEN) is required' : '',
    values['session-dir'] === '' ? '--session-dir must name a folder' : '',
  ].filter(Boolean);
  if (problems.length || !url || !token) {
    out.error(`parley: ${problems.join('; ')}\n\nUsage:\n${BRIDGE_USAGE}`);
    return 1;
  }
  try {
    await import('baileys');
  } catch (err) {
    if ((err as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    out.error(`parley: ${BAILEYS_MISSING}`);
    return 1;
  }
  const { runWhatsAppConnector } = await import('./whatsapp/whatsapp-connector.js');
  const integrationId = Number(values.integration);
  const sessionDir = path.resolve(values['session-dir'] ?? path.join(env.PARLEY_DATA_DIR || './data', `whatsapp-${integrationId}`));
  out.log(
    await runWhatsAppConnector({
      url,
      integrationId,
      token,
      sessionDir,
      log: (message) => out.error(`parley bridge whatsapp: ${message}`),
    }),
  );
  return 0;
}
