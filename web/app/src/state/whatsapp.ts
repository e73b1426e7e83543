import type { HistoryMessage, Source, WhatsAppTemplate } from '../api/types';
import { t } from '../i18n';

/** What the agent app shows of WhatsApp Cloud API conversations: the 24-hour window, ticks, templates. */

export interface WindowState {
  /** Free-form messages may be sent. */
  open: boolean;
  /** Milliseconds left while open. */
  msLeft: number;
}

/** The customer-service window of a channel with a deadline (`expires`); null when it has none. */
export function serviceWindow(source: Pick<Source, 'expires'> | null, now: number): WindowState | null {
  if (!source?.expires) return null;
  const end = Date.parse(source.expires);
  if (!Number.isFinite(end)) return null;
  return { open: end > now, msLeft: Math.max(0, end - now) };
}

/** "5 h 12 min" / "12 min" / "< 1 min". */
export function formatLeft(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return t('duration.underMinute');
  const h = Math.floor(minutes / 60);
  return h ? t('duration.hoursMinutes', { h, m: minutes % 60 }) : t('duration.minutes', { n: minutes });
}

/** Delivery ticks of an outgoing message: one (sent), two (delivered), two blue (read), failed. */
export function ticks(m: Pick<HistoryMessage, 'incoming' | 'status'>): { mark: string; kind: string } | null {
  if (m.incoming || !m.status) return null;
  if (m.status === 'sent') return { mark: '✓', kind: 'sent' };
  if (m.status === 'delivered') return { mark: '✓✓', kind: 'delivered' };
  if (m.status === 'read') return { mark: '✓✓', kind: 'read' };
  return { mark: '!', kind: 'failed' };
}

/** How many `{{n}}` parameters the template's body has. */
export function bodyParameterCount(template: WhatsAppTemplate): number {
  const body = template.components.find((c) => (c as { type?: string }).type === 'BODY') as { text?: string } | undefined;
  const numbers = [...(body?.text ?? '').matchAll(/\{\{\s*(\d+)\s*\}\}/g)].map((m) => Number(m[1]));
  return numbers.length ? Math.max(...numbers) : 0;
}

/** The body text with the parameters filled in, for the preview. */
export function templatePreview(template: WhatsAppTemplate, values: string[]): string {
  const body = template.components.find((c) => (c as { type?: string }).type === 'BODY') as { text?: string } | undefined;
  return (body?.text ?? template.name).replace(/\{\{\s*(\d+)\s*\}\}/g, (all, n: string) => values[Number(n) - 1] || all);
}

/** Send form B for a template with its body parameters. */
export function templateSend(template: WhatsAppTemplate, values: string[]) {
  const count = bodyParameterCount(template);
  return {
    namespace: '',
    name: template.name,
    language: { code: template.language, policy: 'deterministic' },
    ...(count
      ? {
          component_values: [
            { type: 'body', parameters: Array.from({ length: count }, (_, i) => ({ type: 'text', text: values[i] ?? '' })) },
          ],
        }
      : {}),
  };
}
