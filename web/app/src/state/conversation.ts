import type { HistoryMessage } from '../api/types';

/** A message being sent: shown at once, then replaced by the stored one or marked failed. */
export interface Pending {
  tempId: string;
  text: string;
  attachmentName?: string;
  datetime: number;
  replyTo: HistoryMessage | null;
  error: string | null;
}

export interface ConversationState {
  /** Oldest first. */
  messages: HistoryMessage[];
  /** Cursor for the next earlier page; null before the first page; -1 when there is none. */
  cursor: number | null;
  pending: Pending[];
}

export const emptyConversation: ConversationState = { messages: [], cursor: null, pending: [] };

function merge(a: HistoryMessage[], b: HistoryMessage[]): HistoryMessage[] {
  const byId = new Map<string, HistoryMessage>();
  for (const m of a) byId.set(m.messageId, m);
  for (const m of b) byId.set(m.messageId, m);
  return [...byId.values()].sort((x, y) => x.datetime - y.datetime || x.messageId.localeCompare(y.messageId, 'en', { numeric: true }));
}

/** A history page (newest first, as the API answers) joins the messages held; duplicates go. */
export function addHistoryPage(state: ConversationState, page: { cursor: number; messages: HistoryMessage[] }): ConversationState {
  return { ...state, messages: merge(state.messages, page.messages), cursor: page.cursor };
}

/** Messages from the realtime stream or a send answer. */
export function addMessages(state: ConversationState, messages: HistoryMessage[]): ConversationState {
  if (!messages.length) return state;
  return { ...state, messages: merge(state.messages, messages) };
}

export function hasMore(state: ConversationState): boolean {
  return state.cursor !== -1;
}

export function addPending(state: ConversationState, p: Pending): ConversationState {
  return { ...state, pending: [...state.pending, p] };
}

/** The send succeeded: the pending one goes, the stored messages come. */
export function resolvePending(state: ConversationState, tempId: string, messages: HistoryMessage[]): ConversationState {
  return addMessages({ ...state, pending: state.pending.filter((p) => p.tempId !== tempId) }, messages);
}

/** The channel refused or failed: the message stays, marked, with the reason (shown inline). */
export function failPending(state: ConversationState, tempId: string, error: string): ConversationState {
  return { ...state, pending: state.pending.map((p) => (p.tempId === tempId ? { ...p, error } : p)) };
}

export function dropPending(state: ConversationState, tempId: string): ConversationState {
  return { ...state, pending: state.pending.filter((p) => p.tempId !== tempId) };
}

/** Day separators: true where a message starts a new local day. */
export function startsDay(messages: HistoryMessage[], index: number): boolean {
  if (index === 0) return true;
  const a = new Date(messages[index - 1].datetime);
  const b = new Date(messages[index].datetime);
  return a.toDateString() !== b.toDateString();
}

/** The commented post (or media) of a comment thread: the `preview` the customer's comments carry; null on message channels. */
export function threadPost(messages: HistoryMessage[]): NonNullable<HistoryMessage['preview']> | null {
  for (const m of messages) if (m.incoming && m.preview && (m.preview.url || m.preview.description || m.preview.photo)) return m.preview;
  return null;
}

/** Comment integrations whose comments can be answered privately in the direct messages of the same account. */
const PRIVATE_REPLY_TYPES = ['social1_group', 'photonetVOff'];

/** Whether a message can be answered privately: a customer's comment on a Page or Instagram comment channel. */
export function canReplyPrivately(m: HistoryMessage): boolean {
  return m.incoming && m.source.type !== 'message' && PRIVATE_REPLY_TYPES.includes(m.sa.type);
}

/**
 * The send answered for a private reply is stored in another lead (the direct-message one): the
 * pending message goes, nothing joins this comment thread.
 */
export function resolvePrivate(state: ConversationState, tempId: string): ConversationState {
  return dropPending(state, tempId);
}
