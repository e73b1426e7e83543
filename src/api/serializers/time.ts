/** docs/api/resources.md: string instants are ISO 8601 UTC with milliseconds. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

/** v1.1/v1.2 search timestamps are Unix seconds. */
export function unixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}
