/**
 * Progress of a long CLI operation (export, import, backup, account deletion): a bar redrawn in
 * place on a terminal, plain lines at every tenth of the way otherwise (logs, pipes, CI).
 */
export interface ProgressReporter {
  update(done: number, total: number): void;
  /** Ends the bar's line on a terminal. */
  end(): void;
}

const WIDTH = 30;
/** Redraws at most this often on a terminal: a million records would otherwise mean a million writes. */
const REDRAW_MS = 100;

export function progressReporter(
  label: string,
  terminal: { isTTY?: boolean; write(text: string): unknown },
  line: (text: string) => void,
  now: () => number = Date.now,
  /** Appends the time left, from the pace so far (long runs: `parley migrate`). */
  eta = false,
): ProgressReporter {
  let lastStep = -1;
  let started: number | undefined;
  const left = (done: number, total: number) => {
    const t = now();
    started ??= t;
    if (!eta || done <= 0 || done >= total || t === started) return '';
    const seconds = Math.round((((t - started) / done) * (total - done)) / 1000);
    return ` ETA ${seconds >= 60 ? `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s` : `${seconds}s`}`;
  };
  let lastDraw = -Infinity;
  let drawn = false;
  const ratio = (done: number, total: number) => (total > 0 ? Math.min(1, done / total) : 0);
  if (terminal.isTTY) {
    const draw = (done: number, total: number) => {
      const r = ratio(done, total);
      const full = Math.round(r * WIDTH);
      // Trailing blanks clear what a longer previous line (an ETA) left.
      terminal.write(
        `\r${label} [${'#'.repeat(full)}${'-'.repeat(WIDTH - full)}] ${(r * 100).toFixed(0).padStart(3)}% ${done}/${total}${left(done, total)}${eta ? '    ' : ''}`,
      );
      drawn = true;
    };
    return {
      update(done, total) {
        const t = now();
        if (t - lastDraw < REDRAW_MS && done < total) return;
        lastDraw = t;
        draw(done, total);
      },
      end() {
        if (drawn) terminal.write('\n');
      },
    };
  }
  return {
    update(done, total) {
      const step = Math.floor(ratio(done, total) * 10);
      const rest = left(done, total);
      if (step <= lastStep) return;
      lastStep = step;
      line(`${label}: ${step * 10}% (${done}/${total})${rest}`);
    },
    end() {},
  };
}
