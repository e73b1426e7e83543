import type { MessageRow } from '../../db/schema.js';
import type { Attachment } from '../channels/channel.js';

export interface IngestResult {
  messageId: number;
  leadId: number;
  isNewLead: boolean;
  isNewCustomer: boolean;
  /** The message had been stored before (a provider redelivery); nothing changed. */
  duplicate: boolean;
}

export interface OutgoingRecord {
  externalId: string | null;
  text: string;
  url?: string;
  attachments: Attachment[];
  replyTo: MessageRow | undefined;
  customId: string | null;
  at: number;
}
