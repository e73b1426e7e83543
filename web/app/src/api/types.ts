// Shapes of the public /v1.3 API the app uses (see /docs/openapi.json).

export interface TokenObject { token: string; exp: number }
export interface TokenPair { accessToken: TokenObject; refreshToken?: TokenObject }

export type StatusType = 'active' | 'completed' | 'failed' | 'ignore';
export interface Status { id: number; name: string; order: number; type: StatusType; color: string }

export interface Attachment { type: string; url: string; text?: string; preview?: string; filesize?: number }
export interface MessageData { text: string; url: string; attachments: Attachment[] }

export interface LeadCustomer { id: number; login: string; name: string; avatar: string; email: string | null; phone: string | null }
export interface LeadItem { title: string; count: number; [k: string]: unknown }

/** A lead as the lists answer it. */
export interface Lead {
  id: number;
  userId: number | null;
  statusId: number | null;
  read: boolean;
  details: string;
  amount: number;
  responseTime: number | null;
  tags: string[];
  socialAccount: { id: number; login: string; type: string };
  customer: LeadCustomer;
  message: { unread: number; timestamp: string; incoming: boolean; data: MessageData } | null;
  address: string;
  ttn: string;
  customData: string;
  customFields: string;
  paymentTypeId: number | null;
  items: LeadItem[];
  createdAt: string;
}

/** A lead as GET /leads/<id> answers it. */
export interface SingleLead {
  id: number;
  userId: number | null;
  statusId: number | null;
  read: boolean;
  details: string;
  amount: number;
  responseTime: number | null;
  customerId: number;
  timestamp: string;
  address: string;
  ttn: string;
  customData: string;
  customFields: string;
  paymentTypeId: number | null;
  items: LeadItem[];
}

export interface Source {
  id: string;
  realId: number;
  name: string | null;
  type: string;
  saId: number;
  sender: string;
  token: string | null;
  identifier: string;
  expires: string | null;
}

export interface HistoryMessage {
  messageId: string;
  datetime: number;
  sa: { id: number; type: string; login: string; avatar: string };
  incoming: boolean;
  message: MessageData;
  sender: { id: number | string; customerId?: number; login?: string; avatar?: string; userId?: number };
  source: Source;
  replyTo: { messageId: number | string; datetime: number; incoming: boolean; message: MessageData } | null;
  preview: unknown;
}

export interface HistoryPage { cursor: number; source: number; messages: HistoryMessage[] }

export interface Customer {
  id: number;
  login: string;
  name: string;
  avatar: string;
  email: string | null;
  phone: string | null;
  address: string | null;
  profiles: Array<{ id: number; login: string; type: string; socialId: string; profileUrl: string }>;
}

export interface Employee {
  id: number;
  name: string | null;
  login: string;
  role: 'owner' | 'manager';
  confirmed: boolean;
  allowAllDeals: boolean;
  sources: Array<{ id?: number; saId: number | null }>;
  allowedUsers: number[] | null;
  metadata: Record<string, unknown>;
}

export interface Integration {
  id: number;
  type: string;
  login: string;
  avatar: string;
  externalId: string;
  status: string;
  identifier: string;
  url: string;
  widget?: WidgetInfo;
}

export interface WidgetInfo {
  integrationId: number;
  key: string;
  snippet: string;
  scriptUrl: string;
  secret: string;
  settings: { title: string; greeting: string; color: string; [k: string]: unknown };
}

export interface TemplatePhrase { id: number; template: string; hotkey: string; userId: number | null }
export interface TemplateGroup { id: number; key: string; templates: TemplatePhrase[] }
export interface Tag { id: number; tag: string }
export interface PaymentType { id: number; title: string }

export interface Webhook { id: number; url: string; name: string; status: number; events: string[] | null; secret: string }
export interface Delivery {
  id: number;
  eventId: number;
  type: string;
  leadId: number | null;
  status: string;
  attempts: number;
  nextAttemptAt: number | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: number;
  deliveredAt: number | null;
}

export interface ApiKey { id: number; name: string; token?: string }
export interface Plugin { id: number; type: string; name: string; status: string; pluginToken?: string }
export interface Me {
  account: { id: number; status: 'active' | 'expired' };
  user?: { id: number; login: string; name: string; role: string };
}
export interface Tariff {
  trial: boolean;
  expiration: string;
  value: string;
  currency: string;
  period: number;
  subscription: boolean;
  packages: Array<{ packageId: number; count: number; name: string }>;
  price: number;
}

export interface Statistics {
  lists: { inbox: number; active: number; completed: number; all: number; ignore: number };
  statuses: Array<{ id: number; name: string; type: StatusType; count: number }>;
}

export interface FunnelColumn extends Status { leads: Lead[] }

export interface SearchMessage {
  type: string;
  externalId: number;
  leadId: number[];
  senderId: number;
  sourceId: number;
  message: { text: string; timestamp: number };
}

/** A realtime event (decisions.md §7). */
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
}
