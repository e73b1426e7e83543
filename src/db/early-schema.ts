/**
 * A new PostgreSQL schema's script that dist/main.js sent before it loaded the bundle
 * (scripts/server-loader.mjs), in a transaction left open for the snapshot's own rows and the
 * commit (db/schema-snapshot.ts).
 */
export interface EarlySchema {
  /** The database URL the script was sent to. */
  url: string;
  /** The script sent: the snapshot of the build that wrote it. */
  script: string;
  /** The connection, inside the transaction that ran the script. */
  client: { query(text: string, values?: unknown[]): Promise<unknown>; end(): Promise<void> };
  /** True once the script ran; false when it failed (the connection closed, nothing changed). */
  ran: Promise<boolean>;
}

const KEY = Symbol.for('parley.schemaUnderWay');

/** The script under way for `url`, taken once: a later open of the database does not see it. */
export function takeEarlySchema(url: string | undefined): EarlySchema | undefined {
  const slot = globalThis as Record<symbol, EarlySchema | undefined>;
  const early = slot[KEY];
  if (!early || early.url !== url) return undefined;
  slot[KEY] = undefined;
  return early;
}

/** Gives up a script under way: its transaction is rolled back with the connection. */
export async function abandonEarlySchema(early: EarlySchema): Promise<void> {
  if (await early.ran) await early.client.end().catch(() => {});
}
