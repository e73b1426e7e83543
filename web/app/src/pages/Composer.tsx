import { useEffect, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import type { HistoryMessage } from '../api/types';
import { useCatalog } from '../catalog';
import { t } from '../i18n';
import { phraseForKey, searchPhrases, slashQuery, usablePhrases } from '../state/templates';

export interface Outgoing {
  text: string;
  file: File | null;
  replyTo: HistoryMessage | null;
  /** Answer the comment `replyTo` privately, in the direct messages (docs/api/messaging.md "Private replies"). */
  private?: boolean;
}

/**
 * The message box: Enter sends, Shift+Enter breaks the line; template hotkeys insert their
 * phrase; "/" opens the template search; a file comes from the button or a drop.
 */
export function Composer({
  replyTo,
  onCancelReply,
  onSend,
  dropped,
  onDroppedTaken,
  disabled,
  privately = false,
}: {
  replyTo: HistoryMessage | null;
  /** The reply goes privately (a comment answered in the direct messages): text only. */
  privately?: boolean;
  onCancelReply: () => void;
  onSend: (o: Outgoing) => void;
  dropped: File | null;
  onDroppedTaken: () => void;
  disabled: boolean;
}) {
  const { templates, userId } = useCatalog();
  const [text, setText] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const [pick, setPick] = useState(0);
  const [showTemplates, setShowTemplates] = useState(false);
  const box = useRef<HTMLTextAreaElement>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const phrases = useMemo(() => usablePhrases(templates, userId), [templates, userId]);
  const slash = slashQuery(text);
  const matches = slash !== null || showTemplates ? searchPhrases(phrases, slash ?? '') : [];
  const menuOpen = matches.length > 0 || slash !== null;

  useEffect(() => {
    if (dropped) {
      setFile(dropped);
      onDroppedTaken();
      box.current?.focus();
    }
  }, [dropped, onDroppedTaken]);

  useEffect(() => {
    if (replyTo) box.current?.focus();
  }, [replyTo]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: the pick goes back to the first template whenever the typed query changes
  useEffect(() => setPick(0), [slash]);

  const insert = (phrase: string) => {
    setText((cur) => (slashQuery(cur) !== null ? phrase : cur ? `${cur} ${phrase}` : phrase));
    setShowTemplates(false);
    box.current?.focus();
  };

  const submit = () => {
    const value = text.trim();
    if (disabled || (!value && !file)) return;
    if (privately && replyTo) {
      if (!value) return;
      onSend({ text: value, file: null, replyTo, private: true });
      setText('');
      return;
    }
    onSend({ text: value, file, replyTo });
    setText('');
    setFile(null);
  };

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (menuOpen && matches.length) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        setPick((p) => (p + (e.key === 'ArrowDown' ? 1 : matches.length - 1)) % matches.length);
        return;
      }
      if (e.key === 'Enter' || e.key === 'Tab') {
        e.preventDefault();
        insert(matches[Math.min(pick, matches.length - 1)].template);
        return;
      }
    }
    if (e.key === 'Escape') {
      if (showTemplates) setShowTemplates(false);
      else if (slash !== null) setText('');
      else if (replyTo) onCancelReply();
      return;
    }
    const phrase = phraseForKey(phrases, e.nativeEvent);
    if (phrase) {
      e.preventDefault();
      insert(phrase.template);
      return;
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      submit();
    }
  };

  return (
    <div className="composer">
      {replyTo && (
        <div className="replying">
          <span data-private-reply={privately ? '' : undefined}>
            {t(privately ? 'conv.replyingPrivately' : 'conv.replying', {
              text: replyTo.message.text || replyTo.message.attachments[0]?.text || '…',
            })}
          </span>
          <button type="button" className="link small" onClick={onCancelReply} aria-label={t('conv.cancelReply')}>
            ✕
          </button>
        </div>
      )}
      {file && (
        <div className="replying">
          <span>+ {file.name}</span>
          <button type="button" className="link small" onClick={() => setFile(null)} aria-label={t('conv.removeAttachment')}>
            ✕
          </button>
        </div>
      )}
      {menuOpen && (
        // biome-ignore lint/a11y/noNoninteractiveElementToInteractiveRole: ARIA in HTML allows listbox/option on ul/li; focus stays in the text box (aria-activedescendant), so options are not focusable by design
        <ul className="template-menu" role="listbox" aria-label={t('conv.templates')}>
          {matches.length === 0 && <li className="muted">{t('conv.noTemplates')}</li>}
          {matches.map((p, i) => (
            // biome-ignore lint/a11y/useFocusableInteractive: ARIA in HTML allows listbox/option on ul/li; focus stays in the text box (aria-activedescendant), so options are not focusable by design
            <li
              key={p.id}
              // biome-ignore lint/a11y/noNoninteractiveElementToInteractiveRole: ARIA in HTML allows listbox/option on ul/li; focus stays in the text box (aria-activedescendant), so options are not focusable by design
              role="option"
              aria-selected={i === pick}
              className={i === pick ? 'picked' : ''}
              onMouseDown={(e) => {
                e.preventDefault();
                insert(p.template);
              }}
            >
              <span className="muted small">{p.group}</span> {p.template}
              {p.hotkey && <kbd>{p.hotkey}</kbd>}
            </li>
          ))}
        </ul>
      )}
      <div className="composer-row">
        <button
          type="button"
          className="ghost icon"
          onClick={() => fileInput.current?.click()}
          aria-label={t('conv.attach')}
          title={t('conv.attach')}
          disabled={disabled}
        >
          <svg width="18" height="18" viewBox="0 0 24 24" fill="none" stroke="currentColor" strokeWidth="2" aria-hidden="true">
            <path d="M21 11.5l-8.6 8.6a5.5 5.5 0 01-7.8-7.8l9.2-9.2a3.7 3.7 0 015.2 5.2l-9.2 9.2a1.8 1.8 0 01-2.6-2.6l8.5-8.5" />
          </svg>
        </button>
        <input
          ref={fileInput}
          type="file"
          hidden
          onChange={(e) => {
            setFile(e.target.files?.[0] ?? null);
            e.target.value = '';
          }}
        />
        <button
          type="button"
          className="ghost icon"
          onClick={() => setShowTemplates((v) => !v)}
          aria-label={t('conv.templates')}
          title={t('conv.templates')}
          aria-expanded={showTemplates}
        >
          ⚡
        </button>
        <textarea
          ref={box}
          className="composer-input"
          value={text}
          rows={2}
          maxLength={65536}
          placeholder={t('conv.placeholder')}
          aria-label={t('conv.placeholder')}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={onKeyDown}
          disabled={disabled}
        />
        <button type="button" className="primary" onClick={submit} disabled={disabled || (!text.trim() && !file)}>
          {t('conv.send')}
        </button>
      </div>
    </div>
  );
}
