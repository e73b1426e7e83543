import { useEffect, useLayoutEffect, useRef, useState, type KeyboardEvent, type ReactNode } from 'react';
import { nearEnd, scrollToRow, visibleRange } from '../state/window';

interface Props<T> {
  items: T[];
  rowHeight: number;
  keyOf: (item: T) => string | number;
  renderRow: (item: T, index: number, active: boolean) => ReactNode;
  /** Called when the scroll comes near the end (load the next page). */
  onEndReached?: () => void;
  onOpen?: (item: T, index: number) => void;
  label: string;
  activeKey?: string | number | null;
  footer?: ReactNode;
  empty?: ReactNode;
  idPrefix: string;
  /**
   * Bulk selection mode: the listbox becomes multi-select, a click or Space picks an item instead
   * of opening it (`range`: Shift held), Enter still opens.
   */
  picking?: { isPicked: (item: T) => boolean; onPick: (item: T, range: boolean) => void };
}

/**
 * A windowed list of fixed-height rows: only the rows in view (plus a few) are in the DOM, so 10k
 * leads scroll like 50. Keyboard: it is one listbox (arrows, Home/End, Enter opens).
 */
export function VirtualList<T>({
  items,
  rowHeight,
  keyOf,
  renderRow,
  onEndReached,
  onOpen,
  label,
  activeKey,
  footer,
  empty,
  idPrefix,
  picking,
}: Props<T>) {
  const ref = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [viewport, setViewport] = useState(600);
  const [cursor, setCursor] = useState(0);

  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setViewport(el.clientHeight));
    ro.observe(el);
    setViewport(el.clientHeight);
    return () => ro.disconnect();
  }, []);

  const height = items.length * rowHeight;
  useEffect(() => {
    if (onEndReached && items.length && nearEnd(scrollTop, viewport, height, rowHeight * 8)) onEndReached();
  }, [scrollTop, viewport, height, rowHeight, items.length, onEndReached]);

  // Follow the open item with the keyboard cursor.
  useEffect(() => {
    if (activeKey == null) return;
    const i = items.findIndex((x) => keyOf(x) === activeKey);
    if (i >= 0) setCursor(i);
  }, [activeKey, items, keyOf]);

  const { start, end } = visibleRange(scrollTop, viewport, rowHeight, items.length);
  const moveTo = (i: number) => {
    const next = Math.max(0, Math.min(items.length - 1, i));
    setCursor(next);
    const el = ref.current;
    if (el) {
      const top = scrollToRow(el.scrollTop, el.clientHeight, rowHeight, next);
      if (top !== el.scrollTop) el.scrollTop = top;
    }
  };
  const onKeyDown = (e: KeyboardEvent) => {
    if (!items.length) return;
    const page = Math.max(1, Math.floor(viewport / rowHeight) - 1);
    if (e.key === 'ArrowDown') moveTo(cursor + 1);
    else if (e.key === 'ArrowUp') moveTo(cursor - 1);
    else if (e.key === 'PageDown') moveTo(cursor + page);
    else if (e.key === 'PageUp') moveTo(cursor - page);
    else if (e.key === 'Home') moveTo(0);
    else if (e.key === 'End') moveTo(items.length - 1);
    else if (picking && e.key === ' ') {
      const item = items[cursor];
      if (item) picking.onPick(item, e.shiftKey);
    } else if (e.key === 'Enter' || e.key === ' ') {
      const item = items[cursor];
      if (item) onOpen?.(item, cursor);
    } else return;
    e.preventDefault();
  };

  const cursorItem = items[Math.min(cursor, items.length - 1)];
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: the role is a listbox whenever there are items (set just below; the rule cannot see a computed role)
    // biome-ignore lint/a11y/useAriaPropsSupportedByRole: as above: listbox and group both take aria-label
    <div
      ref={ref}
      className="vlist"
      // An empty listbox is invalid (it must own options): without items the box is a plain group.
      role={items.length ? 'listbox' : 'group'}
      aria-label={label}
      aria-multiselectable={picking ? true : undefined}
      tabIndex={0}
      aria-activedescendant={cursorItem ? `${idPrefix}-${keyOf(cursorItem)}` : undefined}
      onScroll={(e) => setScrollTop(e.currentTarget.scrollTop)}
      onKeyDown={onKeyDown}
    >
      {items.length === 0 && empty}
      <div style={{ height, position: 'relative' }}>
        {items.slice(start, end).map((item, k) => {
          const i = start + k;
          return (
            // biome-ignore lint/a11y/useKeyWithClickEvents: the listbox takes the keys (arrows, Enter, Space) for its options through aria-activedescendant
            // biome-ignore lint/a11y/useFocusableInteractive: focus stays on the listbox (aria-activedescendant), so options are not focusable by design
            <div
              key={keyOf(item)}
              id={`${idPrefix}-${keyOf(item)}`}
              role="option"
              aria-selected={picking ? picking.isPicked(item) : keyOf(item) === activeKey}
              className={`vrow${i === cursor ? ' cursor' : ''}${picking?.isPicked(item) ? ' picked' : ''}`}
              style={{ position: 'absolute', top: i * rowHeight, height: rowHeight, left: 0, right: 0 }}
              onClick={(e) => {
                setCursor(i);
                if (picking) picking.onPick(item, e.shiftKey);
                else onOpen?.(item, i);
              }}
            >
              {renderRow(item, i, keyOf(item) === activeKey)}
            </div>
          );
        })}
      </div>
      {footer}
    </div>
  );
}
