import { Type } from 'typebox';
import type { MessageHit } from '../../domain/search/search.service.js';
import { VERSION_TRAITS, type ApiVersion, type VersionTraits } from '../versions.js';
import { unixSeconds } from './time.js';

/** api.md "Search message result": `leadId` and ms on v1.3, `dealId` and seconds before. */
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
