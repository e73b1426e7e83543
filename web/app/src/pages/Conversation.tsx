import { useCallback, useEffect, useLayoutEffect, useRef, useState, type DragEvent } from 'react';
import { api, request } from '../api/client';
import { realtime } from '../api/realtime';
import type { HistoryMessage, HistoryPage, Lead, SingleLead, Source } from '../api/types';
import { useCatalog } from '../catalog';
import { formatDay, formatTime, t } from '../i18n';
import {
  addHistoryPage,
  addMessages,
  addPending,
  dropPending,
  emptyConversation,
  failPending,
  hasMore,
  resolvePending,
  startsDay,
  threadPost,
  canReplyPrivately,
  resolvePrivate,
  type ConversationState,
  type Pending,
} from '../state/conversation';
import { Composer, type Outgoing } from './Composer';
import { TemplateComposer } from './TemplateComposer';
import { formatLeft, serviceWindow, ticks } from '../state/whatsapp';
import { LeadPanel } from './LeadPanel';
import { LeadHeaderTools } from '../components/LeadHeaderTools';
import { ChannelName } from '../channels/ChannelName';
import { healthProblem } from '../channels/ChannelHealth';
import { linkProps } from '../router';
import { errorText } from '../i18n/errors';
import { integrationStatusName, sourceName } from '../i18n/channels';

function Attachments({ m }: { m: HistoryMessage['message'] }) {
  return (
    <>
      {m.attachments.map((a, i) => {
        const image = a.type === 'photo' || a.type === 'sticker';
        return (
          // biome-ignore lint/suspicious/noArrayIndexKey: the attachments of one stored message, in their order: they never move
          <a key={i} href={a.url} target="_blank" rel="noreferrer" className={image ? 'att-img' : 'att-file'}>
            {image ? (
              <img src={a.url} alt={a.text || t('conv.file')} loading="lazy" />
            ) : (
              <>↓ {a.text || a.url.split('/').pop() || t('conv.file')}</>
            )}
          </a>
        );
      })}
    </>
  );
}

/** Delivery ticks of an outgoing message; a failure shows the provider's reason. */
function DeliveryTicks({ m }: { m: HistoryMessage }) {
  const tick = ticks(m);
  if (!tick) return null;
  const label =
    tick.kind === 'failed'
      ? t('wa.status.failed', { reason: m.error?.message || m.error?.title || '' })
      : t(`wa.status.${tick.kind as 'sent' | 'delivered' | 'read'}`);
  return (
    <span className={`ticks ${tick.kind}`} title={label} role="img" aria-label={label} data-status={tick.kind}>
      {tick.mark}
      {tick.kind === 'failed' && <span className="error small"> {label}</span>}
    </span>
  );
}

/** The post (or media) a comment thread is about, as its comments' `preview` shows it. */
function PostPreview({ post }: { post: NonNullable<HistoryMessage['preview']> }) {
  return (
    <aside className="post-preview card-form row" aria-label={t('conv.post')} data-post-preview>
      {post.photo && <img src={post.photo} alt="" loading="lazy" width={64} height={64} />}
      <div className="stack small">
        {post.owner && <strong>{post.owner}</strong>}
        {post.description && <span>{post.description}</span>}
        {post.url && (
          <a href={post.url} target="_blank" rel="noreferrer">
            {post.url}
          </a>
        )}
      </div>
    </aside>
  );
}

function quoteText(m: { message: HistoryMessage['message'] }): string {
  return m.message.text || m.message.attachments.map((a) => a.text || a.type).join(', ');
}

/** One lead's conversation: history (infinite upward), the composer, and the lead panel. */
export function Conversation({ leadId, listLead, onBack }: { leadId: number; listLead: Lead | null; onBack: () => void }) {
  const { statuses, integrations } = useCatalog();
  const [lead, setLead] = useState<SingleLead | null>(null);
  const [sources, setSources] = useState<Source[] | null>(null);
  const [realId, setRealId] = useState<number | null>(null);
  const [conv, setConv] = useState<ConversationState>(emptyConversation);
  /** A widget visitor typing in this conversation: shown until it stops, a message comes, or 8 s pass. */
  const [visitorTyping, setVisitorTyping] = useState(false);
  const typingTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  // biome-ignore lint/correctness/useExhaustiveDependencies: a new conversation starts without the last one's indicator
  useEffect(() => {
    setVisitorTyping(false);
    return () => clearTimeout(typingTimer.current);
  }, [leadId]);
  const [error, setError] = useState<string | null>(null);
  const [replyTo, setReplyTo] = useState<HistoryMessage | null>(null);
  const [privately, setPrivately] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const [panel, setPanel] = useState(() => window.matchMedia?.('(min-width: 1100px)').matches ?? true);
  const [dropping, setDropping] = useState(false);
  const [dropped, setDropped] = useState<File | null>(null);
  const scroller = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const loadingEarlier = useRef(false);
  const anchor = useRef<{ height: number; top: number } | null>(null);
  const retries = useRef(new Map<string, Outgoing>());
  const ctx = useRef({ realId, conv });
  ctx.current = { realId, conv };

  const reloadLead = useCallback(() => api.get<SingleLead>(`/leads/${leadId}`).then(setLead), [leadId]);

  useEffect(() => {
    setError(null);
    Promise.all([reloadLead(), api.get<Source[]>(`/messaging/${leadId}/sources`)])
      .then(([, s]) => {
        setSources(s);
        const messages = s.filter((x) => x.type === 'message');
        setRealId((messages[0] ?? s[0])?.realId ?? null);
      })
      .catch((e: unknown) => setError(errorText(e)));
  }, [leadId, reloadLead]);

  const loadHistory = useCallback(
    async (earlier: boolean) => {
      const { realId, conv } = ctx.current;
      if (realId === null || (earlier && (!hasMore(conv) || loadingEarlier.current))) return;
      loadingEarlier.current = true;
      try {
        const body = earlier && conv.cursor !== null ? { cursor: conv.cursor } : {};
        const page = await api.post<HistoryPage>(`/messaging/${leadId}/history/${realId}`, body);
        if (ctx.current.realId !== realId) return;
        const el = scroller.current;
        if (earlier && el) anchor.current = { height: el.scrollHeight, top: el.scrollTop };
        setConv((c) => addHistoryPage(earlier ? c : { ...c, messages: [] }, page));
      } catch (e) {
        setError(errorText(e));
      } finally {
        loadingEarlier.current = false;
      }
    },
    [leadId],
  );

  useEffect(() => {
    setConv(emptyConversation);
    stick.current = true;
    if (realId !== null) void loadHistory(false);
  }, [realId, loadHistory]);

  // Keep the view where it was when earlier messages are added above; follow new ones at the bottom.
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs after each change of the conversation, before the browser paints it
  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return;
    if (anchor.current) {
      el.scrollTop = el.scrollHeight - anchor.current.height + anchor.current.top;
      anchor.current = null;
    } else if (stick.current) el.scrollTop = el.scrollHeight;
  }, [conv]);

  useEffect(
    () =>
      realtime.subscribe((m) => {
        if (m.kind === 'reset') {
          void loadHistory(false);
          void reloadLead();
          return;
        }
        if (m.kind === 'typing') {
          if (m.leadId !== leadId) return;
          clearTimeout(typingTimer.current);
          setVisitorTyping(m.typing);
          if (m.typing) typingTimer.current = setTimeout(() => setVisitorTyping(false), 8000);
          return;
        }
        if (m.kind !== 'event' || m.event.leadId !== leadId) return;
        const e = m.event;
        if (e.type === 'message.incoming') {
          clearTimeout(typingTimer.current);
          setVisitorTyping(false);
        }
        const message = e.message;
        if (message && (e.type === 'message.incoming' || e.type === 'message.outgoing' || e.type === 'message.status')) {
          // A customer message moves the channel's window: refresh the sources' `expires`.
          if (e.type === 'message.incoming') void api.get<Source[]>(`/messaging/${leadId}/sources`).then(setSources, () => undefined);
          if (message.source.realId === ctx.current.realId) setConv((c) => addMessages(c, [message]));
          else if (e.type !== 'message.incoming' && !sources?.some((s) => s.realId === message.source.realId))
            void api.get<Source[]>(`/messaging/${leadId}/sources`).then(setSources, () => undefined);
        } else if (e.type.startsWith('lead.')) void reloadLead().catch(() => undefined);
      }),
    [leadId, loadHistory, reloadLead, sources],
  );

  const onScroll = () => {
    const el = scroller.current;
    if (!el) return;
    stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
    if (el.scrollTop < 80) void loadHistory(true);
  };

  const send = async (out: Outgoing, retryOf?: Pending) => {
    if (realId === null) return;
    const tempId = retryOf?.tempId ?? `tmp-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const pending: Pending = retryOf
      ? { ...retryOf, error: null }
      : { tempId, text: out.text, attachmentName: out.file?.name, datetime: Date.now(), replyTo: out.replyTo, error: null };
    stick.current = true;
    retries.current.set(tempId, out);
    setConv((c) => addPending(dropPending(c, tempId), pending));
    setReplyTo(null);
    setPrivately(false);
    setNotice(null);
    try {
      let attachment: { type: string; media: unknown } | undefined;
      if (out.file) {
        const form = new FormData();
        form.append('source', String(realId));
        form.append('media', out.file, out.file.name);
        attachment = (await request<{ type: string; media: unknown }>('POST', '/messaging/upload', { form })).data;
      }
      const messages = await api.post<HistoryMessage[]>(`/messaging/${leadId}/send`, {
        source: realId,
        message: { text: out.text || null, ...(attachment ? { attachment } : {}) },
        ...(out.replyTo ? { replyId: out.replyTo.messageId } : {}),
        ...(out.private ? { private: true } : {}),
      });
      if (out.private) {
        setConv((c) => resolvePrivate(c, tempId));
        setNotice(t('conv.sentPrivately'));
      } else setConv((c) => resolvePending(c, tempId, messages));
    } catch (e) {
      setConv((c) => failPending(c, tempId, errorText(e)));
    }
  };

  /** Send form B (a closed WhatsApp window): shown as pending with its preview until stored. */
  const sendTemplate = async (template: object, preview: string) => {
    if (realId === null) return;
    const tempId = `tmp-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    stick.current = true;
    setConv((c) => addPending(c, { tempId, text: preview, datetime: Date.now(), replyTo: null, error: null }));
    try {
      const messages = await api.post<HistoryMessage[]>(`/messaging/${leadId}/send`, { source: realId, template });
      setConv((c) => resolvePending(c, tempId, messages));
    } catch (e) {
      setConv((c) => failPending(c, tempId, errorText(e)));
    }
  };

  const sendTracked = (out: Outgoing) => {
    void send(out);
  };

  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setDropping(false);
    const file = e.dataTransfer.files[0];
    if (file) setDropped(file);
  };

  const source = sources?.find((s) => s.realId === realId) ?? null;
  const post = source && source.type !== 'message' ? threadPost(conv.messages) : null;
  const replyWindow = serviceWindow(source, Date.now());
  // A personal account whose bridge is away (`connecting`) or logged out (`auth failure`) cannot send.
  const integration = integrations.find((i) => i.id === (listLead?.socialAccount.id ?? source?.saId));
  const integrationStatus = integration?.status;
  // The channel's last error, in the app's words, where it keeps this conversation from working.
  const channelProblem = integration ? healthProblem(integration.type, integration.health) : null;
  const customerName = listLead?.customer.name || listLead?.customer.login || t('lead.title', { id: leadId });
  const status = statuses.find((s) => s.id === lead?.statusId);

  return (
    <div className={`conv-wrap${panel ? ' with-panel' : ''}`}>
      <section
        className={`conversation${dropping ? ' dropping' : ''}`}
        aria-label={t('conv.messages')}
        onDragOver={(e) => {
          if (e.dataTransfer.types.includes('Files')) {
            e.preventDefault();
            setDropping(true);
          }
        }}
        onDragLeave={(e) => {
          if (e.currentTarget === e.target) setDropping(false);
        }}
        onDrop={onDrop}
      >
        <header className="conv-head">
          <button type="button" className="ghost icon back" onClick={onBack} aria-label={t('conv.back')}>
            ←
          </button>
          <div className="conv-title">
            <h2>{customerName}</h2>
            <span className="muted small">
              <ChannelName type={listLead?.socialAccount.type ?? source?.type ?? ''} /> {status ? `· ${status.name}` : ''}
            </span>
            {replyWindow && (
              <span className={`small tag ${replyWindow.open ? 'ok' : 'danger'}`} data-window={replyWindow.open ? 'open' : 'closed'}>
                {replyWindow.open ? t('wa.windowOpen', { left: formatLeft(replyWindow.msLeft) }) : t('wa.windowClosed')}
              </span>
            )}
            {!channelProblem && integrationStatus && integrationStatus !== 'active' && (
              <span className="tag danger small" data-integration-status>
                {t('integrations.notActive', { status: integrationStatusName(integrationStatus) })}
              </span>
            )}
          </div>
          {lead && <LeadHeaderTools lead={lead} onChange={setLead} />}
          {sources && sources.length > 1 && (
            <label className="channel-picker small">
              {t('conv.channel')}{' '}
              <select value={realId ?? ''} onChange={(e) => setRealId(Number(e.target.value))}>
                {sources.map((s) => (
                  <option key={s.realId} value={s.realId}>
                    {sourceName(s.type)} · {s.name ?? s.id} (#{s.saId})
                  </option>
                ))}
              </select>
            </label>
          )}
          <button type="button" className="ghost small" aria-expanded={panel} onClick={() => setPanel((p) => !p)}>
            {t('conv.details')}
          </button>
        </header>
        {/* The channel's last error (its health, kept live by the catalogue), with the way to its card. */}
        <div aria-live="polite">
          {channelProblem && integration && (
            <div className="channel-banner error small row wrap" data-channel-problem={integration.id}>
              <span>{channelProblem}</span>
              <a {...linkProps(`/settings/integrations?channel=${integration.id}`)}>{t('conv.channelSettings')}</a>
            </div>
          )}
        </div>
        {error && (
          <p className="error" role="alert">
            {t('app.error', { message: error })}
          </p>
        )}
        {notice && (
          <p className="muted small pad" role="status">
            {notice}
          </p>
        )}
        <div
          className="messages"
          ref={scroller}
          onScroll={onScroll}
          // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must take focus so keyboard users can scroll it (axe: scrollable-region-focusable)
          tabIndex={0}
          role="log"
          aria-label={t('conv.messages')}
          aria-live="polite"
        >
          {post && <PostPreview post={post} />}
          {conv.cursor !== null &&
            (hasMore(conv) ? (
              <button type="button" className="ghost small load-earlier" onClick={() => void loadHistory(true)}>
                {t('conv.loadEarlier')}
              </button>
            ) : (
              <p className="muted small center">{t('conv.start')}</p>
            ))}
          {conv.messages.map((m, i) => (
            <div key={m.messageId}>
              {startsDay(conv.messages, i) && <div className="day">{formatDay(m.datetime)}</div>}
              <article className={`msg ${m.incoming ? 'in' : 'out'}`} data-message-id={m.messageId}>
                {m.replyTo && <blockquote className="quote">{quoteText(m.replyTo)}</blockquote>}
                {m.message.text && <p className="text">{m.message.text}</p>}
                <Attachments m={m.message} />
                <footer className="msg-meta">
                  <time dateTime={new Date(m.datetime).toISOString()}>{formatTime(m.datetime)}</time>
                  <DeliveryTicks m={m} />
                  <button
                    type="button"
                    className="link small"
                    onClick={() => {
                      setReplyTo(m);
                      setPrivately(false);
                    }}
                  >
                    {t('conv.reply')}
                  </button>
                  {canReplyPrivately(m) && (
                    <button
                      type="button"
                      className="link small"
                      data-reply-privately
                      onClick={() => {
                        setReplyTo(m);
                        setPrivately(true);
                      }}
                    >
                      {t('conv.replyPrivately')}
                    </button>
                  )}
                </footer>
              </article>
            </div>
          ))}
          {conv.pending.map((p) => (
            <article key={p.tempId} className={`msg out pending${p.error ? ' failed' : ''}`}>
              {p.replyTo && <blockquote className="quote">{quoteText(p.replyTo)}</blockquote>}
              {p.text && <p className="text">{p.text}</p>}
              {p.attachmentName && <p className="att-file">↑ {p.attachmentName}</p>}
              <footer className="msg-meta">
                {p.error ? (
                  <span className="error" role="alert">
                    {t('conv.failed', { reason: p.error })}{' '}
                    <button
                      type="button"
                      className="link small"
                      onClick={() => void send(retries.current.get(p.tempId) ?? { text: p.text, file: null, replyTo: p.replyTo }, p)}
                    >
                      {t('app.retry')}
                    </button>{' '}
                    <button type="button" className="link small" onClick={() => setConv((c) => dropPending(c, p.tempId))}>
                      {t('conv.discard')}
                    </button>
                  </span>
                ) : (
                  <span className="muted">{t('conv.sending')}</span>
                )}
              </footer>
            </article>
          ))}
        </div>
        <p className="muted small pad typing" aria-live="polite">
          {visitorTyping ? t('conv.visitorTyping') : ''}
        </p>
        {dropping && <div className="drop-hint">{t('conv.drop')}</div>}
        {realId === null && sources !== null ? (
          <p className="muted pad">{t('conv.noSource')}</p>
        ) : replyWindow && !replyWindow.open && source ? (
          <TemplateComposer
            key={`${leadId}:${source.saId}`}
            saId={source.saId}
            onSend={(tpl, preview) => void sendTemplate(tpl, preview)}
            disabled={realId === null}
          />
        ) : (
          <Composer
            key={leadId}
            replyTo={replyTo}
            privately={privately}
            onCancelReply={() => {
              setReplyTo(null);
              setPrivately(false);
            }}
            onSend={sendTracked}
            dropped={dropped}
            onDroppedTaken={() => setDropped(null)}
            disabled={realId === null}
          />
        )}
      </section>
      {panel && lead && <LeadPanel lead={lead} listLead={listLead} onChange={setLead} onClose={() => setPanel(false)} />}
    </div>
  );
}
