import type { Lead, Status } from '../api/types';
import { employeeName, useCatalog } from '../catalog';
import { formatAmount, t } from '../i18n';
import { formatDuration } from '../state/reports';
import '../sales.css';
import { ChannelName } from '../channels/ChannelName';

/**
 * The columns of a lead row, as sales teams read a list: channel, status, time waiting for an
 * answer, response time, amount, responsible employee and tags. Each value carries its column name for screen readers.
 */
export function LeadColumns({ lead, status }: { lead: Lead; status?: Status }) {
  const { employees } = useCatalog();
  const responsible = employeeName(employees, lead.userId);
  return (
    <div className="lead-row-meta lead-cols small muted">
      <span className="chip-type" title={t('filters.channel')}>
        <ChannelName type={lead.socialAccount.type} />
      </span>
      {status && (
        <span className="status-dot" style={{ color: status.color }}>
          ● <span className="muted">{status.name}</span>
        </span>
      )}
      {lead.awaitingSince !== null && lead.awaitingSince !== undefined && (
        <span title={t('cols.waiting')} data-testid="waiting">
          <span className="sr-only">{t('cols.waiting')}: </span>⌛ {formatDuration(Math.max(0, Date.now() - lead.awaitingSince))}
        </span>
      )}
      {lead.responseTime !== null && (
        <span title={t('cols.responseTime')}>
          <span className="sr-only">{t('cols.responseTime')}: </span>⏱ {formatDuration(lead.responseTime)}
        </span>
      )}
      {lead.amount !== 0 && (
        <span className="amount" title={t('cols.amount')}>
          <span className="sr-only">{t('cols.amount')}: </span>
          {formatAmount(lead.amount)}
        </span>
      )}
      {responsible && (
        <span title={t('cols.responsible')}>
          <span className="sr-only">{t('cols.responsible')}: </span>👤 {responsible}
        </span>
      )}
      {lead.tags.slice(0, 3).map((tag) => (
        <span key={tag} className="tag small">
          {tag}
        </span>
      ))}
    </div>
  );
}
