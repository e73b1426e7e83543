/** Next reconnect delay: doubling from 500 ms up to 15 s. */
export function backoff(attempt: number): number {
  return Math.min(15_000, 500 * 2 ** Math.min(attempt, 5));
}
