import type { HistoryMessage } from '../conversations/history-message.js';

/** Inputs and results of the messaging API (docs/api/messaging.md "Sending", "Message history"). */

/** An id as clients send it: a number or a numeric string. */
export type IdInput = number | string;

export interface AttachmentInput {
  /** `photo`, `doc` or `video` (write first: `photo` or `doc`); taken from the file when absent. */
  type?: string;
  /** The media object the upload operation answered. */
  media: object;
}

export interface MessageInput {
  text?: string | null;
  attachment?: AttachmentInput;
}

/** Send form B: a template message of the first messenger's business API, passed to the channel as is. */
export interface TemplateInput {
  namespace: string;
  language: { policy?: string; code: string };
  name: string;
  component_values?: unknown[];
}

export interface SendInput {
  message?: MessageInput | null;
  template?: TemplateInput | null;
  /** The channel's realId (number or numeric string) or its `id` string; the latest message channel when absent. */
  source?: IdInput | null;
  /** Who sends; the caller when absent. */
  userId?: IdInput | null;
  saId?: IdInput | null;
  customId?: string | null;
  /** messageId of a message of this lead to quote. */
  replyId?: IdInput | null;
  /** v1.3: answer the comment of a comment channel privately, in the direct-message integration (docs/api/messaging.md). */
  private?: boolean | null;
}

export interface SendOptions {
  /** Whether `saId` is checked against the channel (v1.2+) or ignored (v1.1). */
  honourSaId: boolean;
  /** Whether `private` is read (v1.3) or ignored (older versions). */
  privateReplies?: boolean;
  /**
   * An automation rule's reply (docs/api/automation.md): stored without an employee, so its
   * sender carries no `userId` but `automation: true`. Its customId starts with `automation-`.
   */
  byAutomation?: boolean;
}

export interface PostInput {
  message?: MessageInput | null;
  destination: string;
  saId: IdInput;
  customId?: string | null;
}

export interface CheckContactInput {
  saId: IdInput;
  chatId: IdInput;
}

export interface HistoryPage {
  /** Send it back for the next, earlier page; -1 when there is none. */
  cursor: number;
  /** The channel's realId. */
  source: number;
  messages: HistoryMessage[];
}

/** A message written first: the History message plus the lead it went to. */
export type PostedMessage = HistoryMessage & { leadId: number };

export const HISTORY_PAGE_SIZE = 50;
