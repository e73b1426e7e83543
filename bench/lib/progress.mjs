// Progress of long steps: a bar redrawn in place on a terminal, plain lines (every 10%) otherwise.

export function progressReporter(label, stream = process.stderr) {
  const tty = Boolean(stream.isTTY);
  const started = performance.now();
  let lastDecile = -1;
  let lastDraw = 0;
  const seconds = () => ((performance.now() - started) / 1000).toFixed(1);
  return {
    update(phase, done, total) {
      const fraction = total ? Math.min(1, done / total) : 1;
      if (tty) {
        const now = performance.now();
        if (now - lastDraw < 100 && done < total) return;
        lastDraw = now;
        const width = 30;
        const full = Math.round(fraction * width);
        stream.write(
          `\r${label} [${'#'.repeat(full)}${' '.repeat(width - full)}] ${(fraction * 100).toFixed(0).padStart(3)}% ${phase} ${done}/${total} ${seconds()} s`,
        );
        return;
      }
      const decile = Math.floor(fraction * 10);
      if (decile > lastDecile) {
        lastDecile = decile;
        stream.write(`${label}: ${decile * 10}% (${phase} ${done}/${total}, ${seconds()} s)\n`);
      }
    },
    done(note = '') {
      if (tty) stream.write('\n');
      stream.write(`${label}: done in ${seconds()} s${note ? ` ${note}` : ''}\n`);
    },
  };
}
