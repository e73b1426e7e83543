// Shapes of the public /v1.3 API the app uses. Generated, not copied: `openapi.gen.ts` is made from
// the server's OpenAPI document by `npm run web:types` (CI checks that it is current), and the
// names below only point into it.
import type { components, paths } from './openapi.gen';

type Schemas = components['schemas'];
type Method = 'get' | 'post' | 'put' | 'delete';
/** The JSON body of a path's 200 answer. */
type Ok<P extends keyof paths, M extends Method> = paths[P][M] extends {
  responses: { 200: { content: { 'application/json': infer T } } };
}
  ? T
  : never;
type Item<T> = T extends Array<infer I> ? I : never;

export type TokenObject = Schemas['Token'];
export interface TokenPair {
  accessToken: TokenObject;
  refreshToken?: TokenObject;
}

export type Status = Schemas['LeadStatus'];
export type StatusType = Status['type'];

export type LeadItem = Schemas['GoodsItem'];
/** A lead as the lists answer it. */
/** A lead list item; `awaitingSince` is on the v1.3 lists' items, not on the funnel's. */
export type Lead = Schemas['LeadListItem'] & Partial<Pick<Schemas['LeadListItemV13'], 'awaitingSince'>>;
/** A lead as GET /leads/<id> answers it. */
export type SingleLead = Schemas['Lead'];

export type Source = Schemas['Source'];
export type HistoryMessage = Schemas['HistoryMessage'];
export type HistoryPage = Ok<'/v1.3/messaging/{id}/history/{realId}', 'post'>;
/** An approved template of a WhatsApp Business Account (`GET /integrations/<id>/templates`). */
export type WhatsAppTemplate = Item<Ok<'/v1.3/integrations/{id}/templates', 'get'>>;

export type Customer = Schemas['Customer'];
/** Other customers with the same phone (`GET /customers/<id>/same-phone`): whom the card offers to merge. */
export type SamePhoneCustomer = Item<Schemas['SamePhoneCustomers']['customers']>;

/** Automation (docs/api/automation.md): a rule's run with each action's outcome, and a channel's distribution. */
export type RuleRun = Item<Ok<'/v1.3/automation/rules/{id}/runs', 'get'>['runs']>;
export type Distribution = Ok<'/v1.3/integrations/{id}/distribution', 'get'>;
export type Employee = Schemas['Employee'];
export type Integration = Schemas['Integration'] & { widget?: WidgetInfo; bridge?: BridgeConnectInfo };
export type WidgetInfo = Schemas['Widget'];
/** Personal accounts: the bridge token (shown once) and how to start a bridge. */
export type BridgeConnectInfo = Schemas['BridgeConnectInfo'];
export type BridgeState = Schemas['BridgeState'];

export type TemplatePhrase = Schemas['TemplatePhrase'];
export type TemplateGroup = Schemas['TemplateGroup'];
export type Tag = Schemas['Tag'];
export type PaymentType = Schemas['PaymentType'];

export type Webhook = Schemas['Webhook'];
export type Delivery = Schemas['WebhookDelivery'];

export type ApiKey = Item<Ok<'/v1.3/account/me/api-keys', 'get'>> & { token?: string };
export type Plugin = Item<Ok<'/v1.3/plugins', 'get'>> & { pluginToken?: string };
export type Me = Ok<'/v1.3/account/me', 'get'>;
export type Tariff = Ok<'/v1.3/account/me/tariff', 'get'>;
export type Statistics = Ok<'/v1.3/leads/statistics', 'get'>;
export type FunnelColumn = Schemas['FunnelColumn'];
export type SearchMessage = Item<Ok<'/v1.3/search/{integrationId}', 'post'>['messages']>;

/**
 * A realtime event (docs/api/webhooks.md). The stream is a WebSocket, which the OpenAPI document
 * does not describe: this one shape is written by hand.
 */
export interface RealtimeEvent {
  type: string;
  accountId?: number;
  leadId?: number;
  isNewLead?: boolean;
  message?: HistoryMessage;
  lead?: unknown;
  statusId?: number | null;
  changes?: string[];
  customerId?: number;
  integrationId?: number;
  note?: Note;
}

/** An internal note on a lead (GET/POST /v1.3/leads/<id>/notes). */
export interface Note {
  id: number;
  leadId: number;
  userId: number | null;
  text: string;
  mentions: number[];
  createdAt: string;
}

export interface ResponseTimeStat {
  median: number | null;
  count: number;
  /** Of `count`, answered within the first-response target; only on the whole, when the account has one. */
  withinTarget?: number;
}
/** GET /v1.3/leads/statistics as the reports page reads it. */
export interface ReportStatistics extends Statistics {
  newLeads: Array<{ date: string; count: number }>;
  responseTime: ResponseTimeStat;
  employees: Array<{ userId: number | null; count: number; responseTime: ResponseTimeStat }>;
  channels: Array<{ type: string; count: number; responseTime: ResponseTimeStat }>;
}

/** OAuth 2 (docs/api/oauth.md). */
export type OAuthApp = Ok<'/v1.3/oauth/apps', 'post'>;
export type ConnectedApp = Item<Ok<'/v1.3/oauth/grants', 'get'>>;
export type ConsentPreview = Ok<'/v1.3/oauth/authorize', 'get'>;

/** GET/PUT /account/me/settings. */
export type AccountSettings = Schemas['AccountSettings'];
