import { useEffect, useState, type ReactNode } from 'react';
import { api } from '../api/client';
import type { Lead, LeadItem, SingleLead } from '../api/types';
import { useCatalog } from '../catalog';
import { t } from '../i18n';
import { CustomerCard } from '../components/CustomerCard';
import { LeadNotes } from '../components/LeadNotes';
import { EmployeeOptions, StatusOptions } from '../components/Options';
import { errorText } from '../i18n/errors';

/** A text/number field saved when it loses focus (or on Enter for single-line fields). */
function Field({
  label,
  value,
  onSave,
  type = 'text',
  multiline = false,
  max = 1000,
}: {
  label: string;
  value: string;
  onSave: (v: string) => Promise<unknown>;
  type?: string;
  multiline?: boolean;
  max?: number;
}) {
  const [draft, setDraft] = useState(value);
  const [state, setState] = useState<'idle' | 'saved' | string>('idle');
  useEffect(() => setDraft(value), [value]);
  const save = async () => {
    if (draft === value) return;
    try {
      await onSave(draft);
      setState('saved');
    } catch (e) {
      setState(errorText(e));
    }
  };
  const props = {
    value: draft,
    maxLength: max,
    onChange: (e: { target: { value: string } }) => {
      setDraft(e.target.value);
      setState('idle');
    },
    onBlur: () => void save(),
  };
  return (
    // biome-ignore lint/a11y/noLabelWithoutControl: the label wraps its control, a textarea or an input chosen just below
    <label className="field">
      {label}
      {multiline ? <textarea {...props} rows={3} /> : <input {...props} type={type} onKeyDown={(e) => e.key === 'Enter' && void save()} />}
      {state === 'saved' ? <small className="ok">{t('app.saved')}</small> : state !== 'idle' && <small className="error">{state}</small>}
    </label>
  );
}

function Section({ title, children }: { title: string; children: ReactNode }) {
  return (
    <section className="panel-section">
      <h3>{title}</h3>
      {children}
    </section>
  );
}

function parseFields(raw: string): Record<string, unknown> {
  try {
    const v = JSON.parse(raw) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function fieldValue(v: unknown): string {
  if (v && typeof v === 'object' && 'value' in v) return String((v as { value: unknown }).value ?? '');
  return v == null ? '' : String(v);
}

/** The lead panel: accept, assignee, status, tags, amount, details, fields, items, payment type, customer. */
export function LeadPanel({
  lead,
  listLead,
  onChange,
  onClose,
}: {
  lead: SingleLead;
  listLead: Lead | null;
  onChange: (l: SingleLead) => void;
  onClose: () => void;
}) {
  const { statuses, employees, paymentTypes, userId } = useCatalog();
  const [tags, setTags] = useState<string[]>(listLead?.tags ?? []);
  const [newTag, setNewTag] = useState('');
  const [error, setError] = useState<string | null>(null);
  const fields = parseFields(lead.customFields);
  const [newField, setNewField] = useState({ key: '', value: '' });
  const [items, setItems] = useState<LeadItem[]>(lead.items);
  useEffect(() => setItems(lead.items), [lead.items]);

  useEffect(() => {
    void api.get<Lead[]>(`/leads?id=${lead.id}`).then(
      (r) => r[0] && setTags(r[0].tags),
      () => undefined,
    );
  }, [lead.id]);

  const update = async (patch: Partial<Omit<SingleLead, 'customFields'>> | { customFields: Record<string, unknown> }) => {
    setError(null);
    try {
      onChange(await api.put<SingleLead>(`/leads/${lead.id}`, patch));
    } catch (e) {
      setError(errorText(e));
      throw e;
    }
  };
  const run = (p: Promise<unknown>) => void p.catch(() => undefined);

  const addTag = async () => {
    const tag = newTag.trim();
    if (!tag) return;
    try {
      setTags(await api.post<string[]>(`/tags/${lead.id}/${encodeURIComponent(tag)}`));
      setNewTag('');
    } catch (e) {
      setError(errorText(e));
    }
  };
  const removeTag = async (tag: string) => {
    try {
      setTags(await api.del<string[]>(`/tags/${lead.id}/${encodeURIComponent(tag)}`));
    } catch (e) {
      setError(errorText(e));
    }
  };

  return (
    <aside className="lead-panel" aria-label={t('conv.details')}>
      <header className="panel-head">
        <h2>{t('lead.title', { id: lead.id })}</h2>
        <button type="button" className="ghost icon" onClick={onClose} aria-label={t('app.close')}>
          ✕
        </button>
      </header>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <LeadNotes leadId={lead.id} />
      {lead.statusId === null && userId !== null && (
        <button
          type="button"
          className="primary wide"
          onClick={() => run(api.put<SingleLead>(`/leads/${lead.id}/accept`, { userId }).then(onChange))}
        >
          {t('lead.accept')}
        </button>
      )}
      <label className="field">
        {t('lead.status')}
        <select value={lead.statusId ?? ''} onChange={(e) => run(update({ statusId: e.target.value ? Number(e.target.value) : null }))}>
          <option value="">{t('lead.inbox')}</option>
          <StatusOptions statuses={statuses} />
        </select>
      </label>
      <label className="field">
        {t('lead.assignee')}
        <select value={lead.userId ?? ''} onChange={(e) => run(update({ userId: e.target.value ? Number(e.target.value) : null }))}>
          <option value="">{t('lead.unassigned')}</option>
          <EmployeeOptions employees={employees} />
        </select>
      </label>
      <Section title={t('lead.tags')}>
        <ul className="tags">
          {tags.map((tag) => (
            <li key={tag} className="tag">
              {tag}
              <button type="button" className="link small" onClick={() => void removeTag(tag)} aria-label={t('lead.removeTag', { tag })}>
                ✕
              </button>
            </li>
          ))}
        </ul>
        <form
          className="row"
          onSubmit={(e) => {
            e.preventDefault();
            void addTag();
          }}
        >
          <input
            value={newTag}
            onChange={(e) => setNewTag(e.target.value)}
            placeholder={t('lead.addTag')}
            aria-label={t('lead.addTag')}
            maxLength={100}
          />
          <button type="submit" className="small">
            {t('app.add')}
          </button>
        </form>
      </Section>
      <Field
        label={t('lead.amount')}
        type="number"
        value={String(lead.amount)}
        onSave={(v) => update({ amount: Math.trunc(Number(v) || 0) })}
      />
      <Field label={t('lead.details')} multiline value={lead.details} onSave={(v) => update({ details: v })} max={10000} />
      <label className="field">
        {t('lead.paymentType')}
        <select
          value={lead.paymentTypeId ?? ''}
          onChange={(e) => run(update({ paymentTypeId: e.target.value ? Number(e.target.value) : null }))}
        >
          <option value="">{t('app.none')}</option>
          {paymentTypes.map((p) => (
            <option key={p.id} value={p.id}>
              {p.title}
            </option>
          ))}
        </select>
      </label>
      <Field label={t('lead.address')} value={lead.address} onSave={(v) => update({ address: v })} />
      <Field label={t('lead.ttn')} value={lead.ttn} onSave={(v) => update({ ttn: v })} />
      <Section title={t('lead.customFields')}>
        {Object.entries(fields).map(([key, v]) => (
          <Field
            key={key}
            label={v && typeof v === 'object' && 'title' in v ? String((v as { title: unknown }).title) : key}
            value={fieldValue(v)}
            onSave={(value) =>
              update({ customFields: { ...fields, [key]: v && typeof v === 'object' ? { ...(v as object), value } : value } })
            }
          />
        ))}
        <form
          className="row"
          onSubmit={(e) => {
            e.preventDefault();
            if (!newField.key.trim()) return;
            run(
              update({ customFields: { ...fields, [newField.key.trim()]: newField.value } }).then(() =>
                setNewField({ key: '', value: '' }),
              ),
            );
          }}
        >
          <input
            value={newField.key}
            onChange={(e) => setNewField({ ...newField, key: e.target.value })}
            placeholder={t('lead.fieldKey')}
            aria-label={t('lead.fieldKey')}
            maxLength={100}
          />
          <input
            value={newField.value}
            onChange={(e) => setNewField({ ...newField, value: e.target.value })}
            placeholder={t('lead.fieldValue')}
            aria-label={t('lead.fieldValue')}
            maxLength={1000}
          />
          <button type="submit" className="small">
            {t('lead.addField')}
          </button>
        </form>
      </Section>
      <Section title={t('lead.items')}>
        {items.map((item, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: items have no ids (the API keeps them as an ordered list); the inputs are controlled, so a row never shows another's value
          <div className="row" key={i}>
            <input
              value={item.title}
              aria-label={t('lead.itemTitle')}
              onChange={(e) => setItems(items.map((x, j) => (j === i ? { ...x, title: e.target.value } : x)))}
              onBlur={() => run(update({ items }))}
              maxLength={500}
            />
            <input
              type="number"
              min={0}
              className="narrow"
              value={item.count}
              aria-label={t('lead.itemCount')}
              onChange={(e) => setItems(items.map((x, j) => (j === i ? { ...x, count: Math.trunc(Number(e.target.value) || 0) } : x)))}
              onBlur={() => run(update({ items }))}
            />
            <button
              type="button"
              className="link small"
              onClick={() => run(update({ items: items.filter((_, j) => j !== i) }))}
              aria-label={t('app.delete')}
            >
              ✕
            </button>
          </div>
        ))}
        <button type="button" className="small" onClick={() => setItems([...items, { title: '', count: 1 }])}>
          {t('lead.addItem')}
        </button>
      </Section>
      <CustomerCard customerId={lead.customerId} leadId={lead.id} />
    </aside>
  );
}
