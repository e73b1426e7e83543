import path from 'node:path';
import type { Deps } from './domain/context.js';
import { AccountsService } from './domain/accounts/accounts.service.js';
import { AccountSettingsService } from './domain/accounts/account-settings.js';
import { AuthService } from './domain/auth/auth.service.js';
import { loadOrCreateSecret } from './domain/auth/secret.js';
import { TokenSigner } from './domain/auth/token-signer.js';
import { OAuthService } from './domain/oauth/oauth.service.js';
import { OAuthProtocol } from './domain/oauth/oauth-protocol.js';
import { DevicesService } from './domain/devices/devices.service.js';
import { PresenceTracker } from './domain/presence/presence.js';
import type { BackgroundWorker } from './domain/workers.js';
import { WebhooksService } from './domain/webhooks/webhooks.service.js';
import { RealtimeHub } from './realtime/realtime-hub.js';
import { Leases } from './domain/leases/leases.js';
import { OutboxNotifier } from './events/outbox-notifier.js';
import { VisitorPush } from './visitor-push/visitor-push.js';
import { DistributionService } from './domain/automation/distribution.service.js';
import { AccountAutomationService } from './domain/automation/account-automation.service.js';
import { RulesService } from './domain/automation/rules.service.js';
import { ChannelRegistry } from './domain/channels/registry.js';
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
import { NotesService } from './domain/notes/notes.service.js';
import { FilesService } from './domain/files/files.service.js';
import { WidgetService } from './domain/widget/widget.service.js';
import { WidgetAdapter } from './channels/widget/widget.adapter.js';
import { LocalDiskStorage } from './storage/local-disk.js';
import { DatabaseStorage } from './storage/database-storage.js';
import { BotChannels } from './channels/bots/bot-channels.js';
import { BridgeHub } from './domain/bridge/bridge-hub.js';
import { BridgeAdapter } from './channels/bridge/bridge.adapter.js';
import { BRIDGE_TYPES } from './domain/bridge/bridge-types.js';
import { BridgeService } from './domain/bridge/bridge.service.js';
import { SocialChannels } from './channels/social/social-channels.js';
import { ProviderHistoryService } from './domain/conversations/provider-history.service.js';
import { MetaChannels } from './channels/meta/meta-channels.js';
import { DeliveryStatusService } from './domain/messaging/delivery-status.service.js';
import { RetentionService } from './domain/retention/retention.service.js';
import { ExportsService } from './domain/portability/exports.service.js';

/** The domain core, built once per process from its dependencies; every face (REST, CLI) uses it. */
export interface Services {
  deps: Deps;
  accounts: AccountsService;
  accountSettings: AccountSettingsService;
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
  /** Internal notes on leads, with @mentions. */
  notes: NotesService;
  /** Uploaded files: storage, media objects, public download. */
  files: FilesService;
  /** The site widget: owners' settings and the visitors' protocol. */
  widget: WidgetService;
  /** Messenger bots (Telegram msgrb_bot, Viber msgrc_bot): adapters, provider webhooks, polling offsets. */
  bots: BotChannels;
  /** Account bridges: the requests routed to them across processes. */
  hub: BridgeHub;
  /** Account bridges: tokens, login prompts, session state, inbound messages. */
  bridge: BridgeService;
  /** Social networks (VK social2_group, OK social3): adapters, provider callbacks, polling cursors. */
  social: SocialChannels;
  /** Meta's products (WhatsApp Cloud API msgra_business_api): adapters, the Meta webhook, templates. */
  meta: MetaChannels;
  /** OAuth 2 apps and grants. */
  oauth: OAuthService;
  /** OAuth 2 authorization server protocol. */
  oauthProtocol: OAuthProtocol;
  /** Employees' push devices. */
  devices: DevicesService;
  /** Who has a realtime connection open, across processes (push goes to the others). */
  presence: PresenceTracker;
  /** Retention limits, their sweep, and account deletion. */
  retention: RetentionService;
  /** Account export jobs of the API. */
  exports: ExportsService;
  /** Named leases in the shared database: work one process at a time does (bot long polls). */
  leases: Leases;
  /** Pushes committed replies and typing indicators to the widget visitors' sockets of this process. */
  visitorPush: VisitorPush;
  /** Distribution of new leads per integration (docs/api/automation.md). */
  distribution: DistributionService;
  /** Working hours and the first-response target (docs/api/automation.md). */
  accountAutomation: AccountAutomationService;
  /** Automation rules and their runs (docs/api/automation.md). */
  rules: RulesService;
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
  const ingest = new IngestService(deps, { health: integrations.health });
  const storage =
    deps.config.fileStorage === 'database'
      ? new DatabaseStorage(deps.db.kysely)
      : new LocalDiskStorage(path.join(deps.config.dataDir, 'files'));
  const files = new FilesService(deps, storage);
  const widget = new WidgetService(deps, { integrations, ingest, files });
  channels.register(new WidgetAdapter(widget.sessions));
  const bots = new BotChannels(deps, { files, ingest, integrations });
  for (const adapter of bots.adapters) channels.register(adapter);
  const hub = new BridgeHub(deps);
  for (const type of BRIDGE_TYPES) channels.register(new BridgeAdapter(type, hub));
  const history = new ProviderHistoryService(deps, ingest);
  const social = new SocialChannels(deps, bots, history);
  for (const adapter of social.adapters) channels.register(adapter);
  const meta = new MetaChannels(deps, bots.kit, { ingest, integrations, deliveryStatuses: new DeliveryStatusService(deps), history });
  for (const adapter of meta.adapters) channels.register(adapter);
  return {
    deps,
    accounts,
    accountSettings: new AccountSettingsService(deps),
    auth,
    channels,
    // On PostgreSQL, other processes learn of this one's events through NOTIFY (outside transactions),
    // one chain of them for all the processes on the database.
    workers: deps.db.dialect === 'postgres' ? [new OutboxNotifier(deps.db.kysely, deps.log, { listenUrl: deps.config.databaseUrl })] : [],
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
    notes: new NotesService(deps),
    files,
    widget,
    bots,
    hub,
    bridge: new BridgeService(deps, { hub, ingest, files, integrations }),
    social,
    meta,
    oauth: new OAuthService(deps),
    oauthProtocol: new OAuthProtocol(deps, signer),
    devices: new DevicesService(deps),
    presence: new PresenceTracker(deps),
    retention: new RetentionService(deps, files.storage),
    exports: new ExportsService(deps, files.storage),
    leases: new Leases(deps),
    visitorPush: new VisitorPush(deps, widget.hub),
    distribution: new DistributionService(deps),
    accountAutomation: new AccountAutomationService(deps),
    rules: new RulesService(deps),
    // Areas: one line each.
  };
}
