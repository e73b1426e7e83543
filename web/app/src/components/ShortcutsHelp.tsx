import { useEffect, useRef, useState } from 'react';
import { t } from '../i18n';
import type { MessageKey } from '../i18n/en';
import { navigate } from '../router';
import '../sales.css';

/** What the screens on view offer to the keyboard; each screen registers the actions it can do. */
export interface ShortcutHandlers {
  next?: () => void;
  prev?: () => void;
  open?: () => void;
  assignToMe?: () => void;
  markRead?: () => void;
}

const handlers = new Map<symbol, ShortcutHandlers>();

/** Registers a screen's shortcut actions while it is mounted (the latest registration wins per action). */
export function useShortcutHandlers(h: ShortcutHandlers): void {
  const ref = useRef(h);
  ref.current = h;
  useEffect(() => {
    const key = Symbol('shortcuts');
    const proxy: ShortcutHandlers = {
      next: () => ref.current.next?.(),
      prev: () => ref.current.prev?.(),
      open: () => ref.current.open?.(),
      assignToMe: () => ref.current.assignToMe?.(),
      markRead: () => ref.current.markRead?.(),
    };
    handlers.set(key, proxy);
    return () => void handlers.delete(key);
  }, []);
}

function run(action: keyof ShortcutHandlers): boolean {
  let done = false;
  for (const [, h] of [...handlers].reverse()) {
    const fn = h[action];
    if (fn) {
      fn();
      done = true;
      break;
    }
  }
  return done;
}

export const SHORTCUTS: Array<{ keys: string[]; label: MessageKey }> = [
  { keys: ['j', '↓'], label: 'keys.next' },
  { keys: ['k', '↑'], label: 'keys.prev' },
  { keys: ['o', 'Enter'], label: 'keys.open' },
  { keys: ['r'], label: 'keys.reply' },
  { keys: ['a'], label: 'keys.assign' },
  { keys: ['m'], label: 'keys.read' },
  { keys: ['/'], label: 'keys.search' },
  { keys: ['?'], label: 'keys.help' },
];

const typing = (el: Element | null) =>
  !!el &&
  (el instanceof HTMLInputElement ||
    el instanceof HTMLTextAreaElement ||
    el instanceof HTMLSelectElement ||
    (el as HTMLElement).isContentEditable);

/**
 * The app's keyboard shortcuts (single keys, never while typing) and the `?` overlay listing them.
 * The overlay is a modal dialog: focus moves into it, Escape closes it, focus returns.
 */
export function ShortcutsHelp() {
  const [open, setOpen] = useState(false);
  const closeButton = useRef<HTMLButtonElement>(null);
  const returnTo = useRef<Element | null>(null);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
      if (typing(document.activeElement)) return;
      let handled = true;
      switch (e.key) {
        case '?':
          returnTo.current = document.activeElement;
          setOpen(true);
          break;
        case 'j':
          handled = run('next');
          break;
        case 'k':
          handled = run('prev');
          break;
        case 'o':
          handled = run('open');
          break;
        case 'a':
          handled = run('assignToMe');
          break;
        case 'm':
          handled = run('markRead');
          break;
        case 'r': {
          const box = document.querySelector<HTMLTextAreaElement>('.composer-input');
          if (box && !box.disabled) box.focus();
          else handled = false;
          break;
        }
        case '/':
          navigate('/search');
          requestAnimationFrame(() => document.querySelector<HTMLInputElement>('input[type="search"], .search-page input')?.focus());
          break;
        default:
          handled = false;
      }
      if (handled) e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  useEffect(() => {
    if (open) closeButton.current?.focus();
  }, [open]);

  if (!open) return null;
  const close = () => {
    setOpen(false);
    (returnTo.current as HTMLElement | null)?.focus?.();
  };
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: a click on the backdrop closes the dialog; keyboard users close it with Escape inside the dialog
    <div className="overlay" onMouseDown={(e) => e.target === e.currentTarget && close()}>
      <div
        className="dialog"
        role="dialog"
        aria-modal="true"
        aria-labelledby="shortcuts-title"
        onKeyDown={(e) => {
          if (e.key === 'Escape' || e.key === '?') {
            e.preventDefault();
            e.stopPropagation();
            close();
          }
          if (e.key === 'Tab') {
            // The close button is the only control: keep focus inside the dialog.
            e.preventDefault();
            closeButton.current?.focus();
          }
        }}
      >
        <h2 id="shortcuts-title">{t('keys.title')}</h2>
        <dl className="keys">
          {SHORTCUTS.map((s) => (
            <div key={s.label} style={{ display: 'contents' }}>
              <dt>
                {s.keys.map((k, i) => (
                  <span key={k}>
                    {i > 0 && ' / '}
                    <kbd>{k}</kbd>
                  </span>
                ))}
              </dt>
              <dd>{t(s.label)}</dd>
            </div>
          ))}
        </dl>
        <button type="button" ref={closeButton} className="primary" onClick={close}>
          {t('keys.close')}
        </button>
      </div>
    </div>
  );
}
