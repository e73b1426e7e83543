import { describe, expect, it } from 'vitest';
import type { WhatsAppTemplate } from '../api/types';
import { bodyParameterCount, formatLeft, serviceWindow, templatePreview, templateSend, ticks } from './whatsapp';

const template: WhatsAppTemplate = {
  name: 'order_update',
  language: 'en_US',
  category: 'UTILITY',
  status: 'APPROVED',
  components: [
    { type: 'HEADER', format: 'TEXT', text: 'Hi' },
    { type: 'BODY', text: 'Order {{1}} ships {{2}}.' },
  ],
};

describe('WhatsApp conversation state', () => {
  it('tells whether the 24-hour window is open and how long is left', () => {
    const now = Date.UTC(2026, 2, 1, 12);
    expect(serviceWindow({ expires: new Date(now + 5 * 3600_000 + 12 * 60_000).toISOString() }, now)).toEqual({
      open: true,
      msLeft: 5 * 3600_000 + 12 * 60_000,
    });
    expect(serviceWindow({ expires: new Date(now - 1).toISOString() }, now)).toEqual({ open: false, msLeft: 0 });
    expect(serviceWindow({ expires: null }, now)).toBeNull();
    expect(formatLeft(5 * 3600_000 + 12 * 60_000)).toBe('5 h 12 min');
    expect(formatLeft(30_000)).toBe('< 1 min');
  });

  it('draws ticks from the delivery status of outgoing messages only', () => {
    expect(ticks({ incoming: false, status: 'sent' })).toEqual({ mark: '✓', kind: 'sent' });
    expect(ticks({ incoming: false, status: 'read' })).toEqual({ mark: '✓✓', kind: 'read' });
    expect(ticks({ incoming: false, status: 'failed' })?.kind).toBe('failed');
    expect(ticks({ incoming: true, status: 'read' })).toBeNull();
    expect(ticks({ incoming: false })).toBeNull();
  });

  it('builds send form B from a template and its body parameters', () => {
    expect(bodyParameterCount(template)).toBe(2);
    expect(templatePreview(template, ['A-17'])).toBe('Order A-17 ships {{2}}.');
    expect(templateSend(template, ['A-17', 'today'])).toEqual({
      namespace: '',
      name: 'order_update',
      language: { code: 'en_US', policy: 'deterministic' },
      component_values: [
        {
          type: 'body',
          parameters: [
            { type: 'text', text: 'A-17' },
            { type: 'text', text: 'today' },
          ],
        },
      ],
    });
    expect(templateSend({ ...template, components: [] }, [])).not.toHaveProperty('component_values');
  });
});
