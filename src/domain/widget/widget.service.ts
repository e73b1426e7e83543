import { RateLimiter } from '../auth/rate-limiter.js';
import type { Deps } from '../context.js';
import type { IngestService } from '../conversations/ingest.service.js';
import type { FilesService } from '../files/files.service.js';
import type { IntegrationsService } from '../integrations/integrations.service.js';
import { VisitorHub } from './visitor-hub.js';
import { WidgetAdmin } from './widget-admin.js';
import { WidgetConversation } from './widget-conversation.js';
import { WidgetSessions } from './widget-sessions.js';
import { WidgetTyping } from './widget-typing.js';

export interface WidgetParts {
  integrations: IntegrationsService;
  ingest: IngestService;
  files: FilesService;
}

const TEN_MINUTES = 10 * 60_000;
const MINUTE = 60_000;

/**
 * The site widget, by concern: `admin` for owners (connect input, settings, snippet,
 * secret); for visitors (the public protocol) `sessions` (origins, sessions, identity
 * verification, tokens), `conversation` (messages through the ingest pipeline, attachments,
 * history) and `typing` (indicators both ways, through the outbox); `hub`, the visitors' open
 * sockets of this process that visitor-push/ writes to. The rate limits are made here, once.
 */
export class WidgetService {
  readonly hub = new VisitorHub();
  readonly admin: WidgetAdmin;
  readonly sessions: WidgetSessions;
  readonly conversation: WidgetConversation;
  readonly typing: WidgetTyping;

  constructor(deps: Deps, parts: WidgetParts) {
    const { config } = deps;
    const messagesPerIp = RateLimiter.for(deps, 'widget-ip-messages', config.widgetMessagesPerMinute * 3, MINUTE);
    this.admin = new WidgetAdmin(deps, parts.integrations);
    this.sessions = new WidgetSessions(deps, parts.integrations, {
      newSessionsPerIp: RateLimiter.for(deps, 'widget-new-sessions', config.widgetSessionsPerIp, TEN_MINUTES),
      sessionCallsPerIp: RateLimiter.for(deps, 'widget-session-calls', config.widgetSessionsPerIp * 10, TEN_MINUTES),
    });
    this.conversation = new WidgetConversation(deps, parts, {
      messagesPerVisitor: RateLimiter.for(deps, 'widget-visitor-messages', config.widgetMessagesPerMinute, MINUTE),
      messagesPerIp,
      uploadsPerVisitor: RateLimiter.for(deps, 'widget-uploads', Math.max(1, Math.ceil(config.widgetMessagesPerMinute / 2)), TEN_MINUTES),
    });
    this.typing = new WidgetTyping(deps);
  }
}
