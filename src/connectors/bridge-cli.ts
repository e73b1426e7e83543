import { parseArgs } from 'node:util';

export const BRIDGE_USAGE = `  bridge telegram --url <parley URL> --integration <id> --token <bridge token>
                  --api-id <id> --api-hash <hash> [--session <file>] [--login qr|phone]
                              serve a Telegram user account (msgrb_personal) to Parley through the
                              account bridge (docs/channels/bridge.md); the token may be given as
                              PARLEY_BRIDGE_TOKEN, the API id/hash (my.telegram.org) as
                              TELEGRAM_API_ID / TELEGRAM_API_HASH`;

/** `parley bridge <connector> ...`: runs a connector until its bridge closes for good. Needs no database. */
export async function runBridgeCli(args: string[], env: NodeJS.ProcessEnv, out: Pick<Console, 'log' | 'error'>): Promise<number> {
  const [connector, ...rest] = args;
  if (connector !== 'telegram') {
    out.error(`parley: unknown connector "${connector ?? ''}" (shipped: telegram)\n\nUsage:\n${BRIDGE_USAGE}`);
    return 1;
  }
  let values;
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
