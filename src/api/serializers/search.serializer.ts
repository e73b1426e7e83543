import { Type } from 'typebox';
import type { MessageHit } from '../../domain/search/search.service.js';
import { VERSION_TRAITS, type ApiVersion, type VersionTraits } from '../versions.js';
import { unixSeconds } from './time.js';
import { LeadListItemObject, serializeLeadListItem } from './leads.serializer.js';
import type { LeadListEntry } from '../../domain/leads/leads.types.js';

/** docs/api/resources.md "Search message result": `leadId` and ms on v1.3, `dealId` and seconds before. */
export function serializeMessageHits(hits: MessageHit[], traits: VersionTraits) {
  const deals = traits.searchNaming === 'deals';
  return hits.map((h) => ({
    type: h.type,
    externalId: h.messageId,
    [deals ? 'dealId' : 'leadId']: [h.leadId],
    senderId: h.senderId,
    sourceId: h.sourceId,
    message: { text: h.text, timestamp: deals ? unixSeconds(h.at) : h.at },
  }));
}

export function messageSearchResponse(version: ApiVersion) {
  const deals = VERSION_TRAITS[version].searchNaming === 'deals';
  const leadKey = deals ? 'dealId' : 'leadId';
  return Type.Object({
    cursors: Type.Array(Type.Object({ type: Type.String(), cursor: Type.Integer() })),
    messages: Type.Array(
      Type.Object({
        type: Type.String(),
        externalId: Type.Integer(),
        [leadKey]: Type.Array(Type.Integer()),
        senderId: Type.Integer(),
        sourceId: Type.Integer(),
        message: Type.Object({
          text: Type.String(),
          timestamp: Type.Integer({ description: deals ? 'Unix seconds' : 'Unix milliseconds' }),
        }),
      }),
    ),
  });
}

/** `{cursor, leads}` on v1.3, `{cursor, deals}` before. */
export function customerSearchBody(cursor: number, leads: LeadListEntry[], traits: VersionTraits) {
  return { cursor, [traits.searchNaming]: leads.map(serializeLeadListItem) };
}

export function customerSearchResponse(version: ApiVersion) {
  return Type.Object({ cursor: Type.Integer(), [VERSION_TRAITS[version].searchNaming]: Type.Array(LeadListItemObject) });
}
