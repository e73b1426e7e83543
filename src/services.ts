import path from 'node:path';
import type { Deps } from './domain/context.js';
import { AccountsService } from './domain/accounts/accounts.service.js';
import { AuthService } from './domain/auth/auth.service.js';
import { loadOrCreateSecret } from './domain/auth/secret.js';
import { TokenSigner } from './domain/auth/token-signer.js';
import type { BackgroundWorker } from './domain/workers.js';
import { WebhooksService } from './domain/webhooks/webhooks.service.js';
import { RealtimeHub } from './realtime/realtime-hub.js';
import { ChannelRegistry } from './channels/registry.js';
import { IntegrationsService } from './domain/integrations/integrations.service.js';
import { CustomersService } from './domain/customers/customers.service.js';
import { EmployeesService } from './domain/employees/employees.service.js';
import { PluginsService } from './domain/plugins/plugins.service.js';
import { createMailer, type Mailer } from './mail/mailer.js';
import { IngestService } from './domain/conversations/ingest.service.js';
import { MessagingService } from './domain/messaging/messaging.service.js';
import { SearchService } from './domain/search/search.service.js';
import { StatusesService } from './domain/statuses/statuses.service.js';
import { TemplatesService } from './domain/templates/templates.service.js';
import { TagsService } from './domain/tags/tags.service.js';
import { PaymentTypesService } from './domain/payment-types/payment-types.service.js';
import { LeadsService } from './domain/leads/leads.service.js';
import { FilesService } from './domain/files/files.service.js';
import { WidgetService } from './domain/widget/widget.service.js';
import { WidgetAdapter } from './channels/widget/widget.adapter.js';
import { LocalDiskStorage } from './storage/local-disk.js';
import { BotChannels } from './channels/bots/bot-channels.js';

/** The domain core, built once per process from its dependencies; every face (REST, CLI) uses it. */
export interface Services {
  deps: Deps;
  accounts: AccountsService;
  auth: AuthService;
  /** Channel adapters by integration type. */
  channels: ChannelRegistry;
  /** Workers this process runs; started by main, asked by /ready, stopped on shutdown. */
  workers: BackgroundWorker[];
  statuses: StatusesService;
  templates: TemplatesService;
  tags: TagsService;
  paymentTypes: PaymentTypesService;
  ingest: IngestService;
  search: SearchService;
  employees: EmployeesService;
  plugins: PluginsService;
  /** Outgoing e-mail (SMTP, or the log when SMTP is not configured). */
  mailer: Mailer;
  integrations: IntegrationsService;
  customers: CustomersService;
  /** Sources, history, send, write first, contact checks. */
  messaging: MessagingService;
  webhooks: WebhooksService;
  /** Fan-out of committed events to realtime subscribers (this process). */
  realtime: RealtimeHub;
  leads: LeadsService;
  /** Uploaded files: storage, media objects, public download. */
  files: FilesService;
  /** The site widget: owners' settings and the visitors' protocol (issue 8). */
  widget: WidgetService;
  /** Messenger bots (Telegram msgrb_bot, Viber msgrc_bot): adapters, provider webhooks, polling offsets (issue 11). */
  bots: BotChannels;
  // Areas: one line each.
}

export function createServices(deps: Deps): Services {
  const secret = loadOrCreateSecret(deps.config.jwtSecret, deps.config.dataDir, 'jwt-secret');
  const signer = new TokenSigner(secret, deps.clock);
  const accounts = new AccountsService(deps);
  const auth = new AuthService(deps, signer, accounts);
  const channels = new ChannelRegistry();
  const integrations = new IntegrationsService(deps, channels);
  const mailer = createMailer(deps.config, deps.log);
  const ingest = new IngestService(deps);
  const files = new FilesService(deps, new LocalDiskStorage(path.join(deps.config.dataDir, 'files')));
  const widget = new WidgetService(deps, { integrations, ingest, files });
  channels.register(new WidgetAdapter(widget));
  const bots = new BotChannels(deps, { files, ingest, integrations });
  for (const adapter of bots.adapters) channels.register(adapter);
  return {
    deps,
    accounts,
    auth,
    channels,
    workers: [],
    statuses: new StatusesService(deps),
    templates: new TemplatesService(deps),
    tags: new TagsService(deps),
    paymentTypes: new PaymentTypesService(deps),
    ingest,
    search: new SearchService(deps),
    employees: new EmployeesService(deps, auth, mailer),
    plugins: new PluginsService(deps, signer),
    mailer,
    integrations,
    customers: new CustomersService(deps, integrations, channels),
    messaging: new MessagingService(deps, { accounts, integrations, channels, ingest, files }),
    webhooks: new WebhooksService(deps),
    realtime: new RealtimeHub(deps),
    leads: new LeadsService(deps),
    files,
    widget,
    bots,
    // Areas: one line each.
  };
}
