import { describe, expect, it } from 'vitest';
import type { HistoryMessage } from '../api/types';
import { addPending, canReplyPrivately, emptyConversation, resolvePrivate, threadPost } from './conversation';

function comment(
  id: string,
  over: { incoming?: boolean; saType?: string; sourceType?: string; preview?: HistoryMessage['preview'] } = {},
): HistoryMessage {
  return {
    messageId: id,
    datetime: Number(id),
    sa: { id: 1, type: over.saType ?? 'social1_group', login: 'Cafe', avatar: '' },
    incoming: over.incoming ?? true,
    message: { text: `c${id}`, url: '', attachments: [] },
    sender: { id: 1 },
    source: {
      id: '10_20:30',
      realId: 5,
      name: 'post',
      type: over.sourceType ?? 'comment',
      saId: 1,
      sender: '30',
      token: null,
      identifier: '10',
      expires: null,
    },
    replyTo: null,
    preview:
      over.preview === undefined
        ? { photo: 'https://cdn/p.jpg', description: 'Cherry cake', owner: 'Cafe', url: 'https://fb/p' }
        : over.preview,
  };
}

describe('comment threads', () => {
  it("shows the post of the customer's comments, none on a thread without one", () => {
    expect(threadPost([comment('1', { incoming: false, preview: null }), comment('2')])).toEqual({
      photo: 'https://cdn/p.jpg',
      description: 'Cherry cake',
      owner: 'Cafe',
      url: 'https://fb/p',
    });
    expect(threadPost([comment('1', { preview: null })])).toBeNull();
    expect(threadPost([comment('1', { preview: { photo: '', description: '', owner: 'x', url: '' } })])).toBeNull();
  });

  it("offers a private reply on customers' Page and Instagram comments only", () => {
    expect(canReplyPrivately(comment('1'))).toBe(true);
    expect(canReplyPrivately(comment('1', { saType: 'photonetVOff', sourceType: 'video' }))).toBe(true);
    expect(canReplyPrivately(comment('1', { incoming: false }))).toBe(false);
    expect(canReplyPrivately(comment('1', { saType: 'social2_group' }))).toBe(false);
    expect(canReplyPrivately(comment('1', { saType: 'social1_messenger', sourceType: 'message' }))).toBe(false);
  });

  it('drops the pending private reply without adding the direct message to the comment thread', () => {
    const s = addPending(emptyConversation, { tempId: 't1', text: 'psst', datetime: 1, replyTo: null, error: null });
    expect(resolvePrivate(s, 't1')).toEqual(emptyConversation);
  });
});
