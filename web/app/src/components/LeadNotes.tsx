import { useEffect, useLayoutEffect, useRef, useState, type KeyboardEvent } from 'react';
import { api } from '../api/client';
import { realtime } from '../api/realtime';
import type { Note } from '../api/types';
import { employeeName, useCatalog } from '../catalog';
import { formatDateTime, formatRelative, t } from '../i18n';
import { insertMention, mentionAt, mentionCandidates, splitMentions } from '../state/mentions';
import '../sales.css';
import { errorText } from '../i18n/errors';

/** Internal notes of a lead: the team's talk, never sent to the customer; `@` mentions colleagues. */
export function LeadNotes({ leadId }: { leadId: number }) {
  const { employees } = useCatalog();
  const [notes, setNotes] = useState<Note[]>([]);
  const [text, setText] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [mention, setMention] = useState<{ start: number; query: string } | null>(null);
  const [pick, setPick] = useState(0);
  const box = useRef<HTMLTextAreaElement>(null);
  // The caret after inserting a mention, placed before the browser paints (and before the next key).
  const caret = useRef<number | null>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs after each change of the text, which is when a mention was inserted
  useLayoutEffect(() => {
    if (caret.current !== null && box.current) box.current.setSelectionRange(caret.current, caret.current);
    caret.current = null;
  }, [text]);

  useEffect(() => {
    void api.get<Note[]>(`/leads/${leadId}/notes`).then(setNotes, (e: unknown) => setError(errorText(e)));
    return realtime.subscribe((m) => {
      if (m.kind !== 'event' || m.event.type !== 'lead.note.created' || m.event.leadId !== leadId || !m.event.note) return;
      const note = m.event.note;
      setNotes((list) => (list.some((n) => n.id === note.id) ? list : [...list, note]));
    });
  }, [leadId]);

  const candidates = mention ? mentionCandidates(employees, mention.query) : [];
  const track = (value: string, caret: number) => {
    setText(value);
    setMention(mentionAt(value, caret));
    setPick(0);
  };
  const choose = (i: number) => {
    const e = candidates[i];
    const el = box.current;
    if (!e || !mention || !el) return;
    const next = insertMention(text, mention.start, el.selectionStart, e);
    caret.current = next.caret;
    setText(next.text);
    setMention(null);
  };
  const submit = async () => {
    if (!text.trim()) return;
    setError(null);
    try {
      const note = await api.post<Note>(`/leads/${leadId}/notes`, { text });
      setNotes((list) => (list.some((n) => n.id === note.id) ? list : [...list, note]));
      setText('');
    } catch (e) {
      setError(errorText(e));
    }
  };
  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (candidates.length) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        setPick((p) => (p + (e.key === 'ArrowDown' ? 1 : candidates.length - 1)) % candidates.length);
        return;
      }
      if (e.key === 'Enter' || e.key === 'Tab') {
        e.preventDefault();
        choose(pick);
        return;
      }
      if (e.key === 'Escape') {
        e.preventDefault();
        setMention(null);
        return;
      }
    }
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      void submit();
    }
  };

  return (
    <section className="panel-section" aria-labelledby={`notes-${leadId}`}>
      <h3 id={`notes-${leadId}`}>{t('notes.title')}</h3>
      <p className="muted small">{t('notes.hint')}</p>
      {notes.length === 0 ? (
        <p className="muted small">{t('notes.empty')}</p>
      ) : (
        <ul className="notes">
          {notes.map((n) => (
            <li key={n.id} className="note" data-note-id={n.id}>
              <div className="small muted">
                {n.userId === null ? t('notes.unknownAuthor') : (employeeName(employees, n.userId) ?? `#${n.userId}`)} ·{' '}
                <time dateTime={n.createdAt} title={formatDateTime(n.createdAt)}>
                  {formatRelative(Date.parse(n.createdAt))}
                </time>
              </div>
              {splitMentions(
                n.text,
                employees.filter((e) => n.mentions.includes(e.id)),
              ).map((part, i) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one stored note, in text order: they never move
                <span key={i} className={part.userId ? 'mention' : undefined}>
                  {part.text}
                </span>
              ))}
            </li>
          ))}
        </ul>
      )}
      <form
        className="note-form"
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        {candidates.length > 0 && (
          // biome-ignore lint/a11y/noNoninteractiveElementToInteractiveRole: ARIA in HTML allows listbox/option on ul/li; focus stays in the text box (aria-activedescendant), so options are not focusable by design
          <ul className="mention-list" role="listbox" id={`mentions-${leadId}`} aria-label={t('notes.suggestions')}>
            {candidates.map((c, i) => (
              // biome-ignore lint/a11y/useFocusableInteractive: ARIA in HTML allows listbox/option on ul/li; focus stays in the text box (aria-activedescendant), so options are not focusable by design
              <li
                key={c.id}
                id={`mention-${leadId}-${c.id}`}
                // biome-ignore lint/a11y/noNoninteractiveElementToInteractiveRole: ARIA in HTML allows listbox/option on ul/li; focus stays in the text box (aria-activedescendant), so options are not focusable by design
                role="option"
                aria-selected={i === pick}
                onMouseDown={(e) => {
                  e.preventDefault();
                  choose(i);
                }}
              >
                {c.name || c.login} <span className="muted small">{c.login}</span>
              </li>
            ))}
          </ul>
        )}
        <textarea
          ref={box}
          rows={2}
          value={text}
          maxLength={10000}
          placeholder={t('notes.placeholder')}
          aria-label={t('notes.placeholder')}
          role="combobox"
          aria-expanded={candidates.length > 0}
          aria-controls={candidates.length ? `mentions-${leadId}` : undefined}
          aria-autocomplete="list"
          aria-activedescendant={candidates[pick] ? `mention-${leadId}-${candidates[pick].id}` : undefined}
          onChange={(e) => track(e.target.value, e.target.selectionStart)}
          onKeyDown={onKeyDown}
          onBlur={() => setMention(null)}
        />
        {error && (
          <p className="error small" role="alert">
            {error}
          </p>
        )}
        <button type="submit" className="small" disabled={!text.trim()}>
          {t('notes.add')}
        </button>
      </form>
    </section>
  );
}
