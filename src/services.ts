import type { Deps } from './domain/context.js';
import { AccountsService } from './domain/accounts/accounts.service.js';
import { AuthService } from './domain/auth/auth.service.js';
import { loadOrCreateSecret } from './domain/auth/secret.js';
import { TokenSigner } from './domain/auth/token-signer.js';
import type { BackgroundWorker } from './domain/workers.js';
import { ChannelRegistry } from './channels/registry.js';

/** The domain core, built once per process from its dependencies; every face (REST, CLI) uses it. */
export interface Services {
  deps: Deps;
  accounts: AccountsService;
  auth: AuthService;
  /** Channel adapters by integration type. */
  channels: ChannelRegistry;
  /** Workers this process runs; started by main, asked by /ready, stopped on shutdown. */
  workers: BackgroundWorker[];
  // Areas: one line each.
}

export function createServices(deps: Deps): Services {
  const secret = loadOrCreateSecret(deps.config.jwtSecret, deps.config.dataDir, 'jwt-secret');
  const signer = new TokenSigner(secret, deps.clock);
  const accounts = new AccountsService(deps);
  const auth = new AuthService(deps, signer, accounts);
  const channels = new ChannelRegistry();
  return {
    deps,
    accounts,
    auth,
    channels,
    workers: [],
    // Areas: one line each.
  };
}
