import { sql, type Kysely, type KyselyPlugin } from 'kysely';
import type { Executor } from '../../src/db/database.js';
import type { Database } from '../../src/db/schema.js';

/**
 * A Kysely plugin counting the statements run through it, as they run (so that statements compiled
 * once, db/prepared.ts, count too), and naming the first table of each query built through it
 * (prepared statements are built once, so they are counted but not named). `reset` starts over.
 */
export function statementCounter(): { counter: KyselyPlugin; statements: () => number; tables: () => string[]; reset: () => void } {
  let n = 0;
  let tables: string[] = [];
  const counter: KyselyPlugin = {
    transformQuery: (args) => {
      const table = JSON.stringify(args.node).match(
        /"kind":"TableNode","table":\{[^}]*"identifier":\{"kind":"IdentifierNode","name":"(\w+)"/,
      );
      tables.push(table?.[1] ?? '?');
      return args.node;
    },
    transformResult: async (args) => {
      n++;
      return args.result;
    },
  };
  return {
    counter,
    statements: () => n,
    tables: () => tables,
    reset: () => {
      n = 0;
      tables = [];
    },
  };
}

/**
 * `db` with its transactions watched: how many were started through it, and the most that were
 * under way at once (from the call that starts one, a wait for a connection included, to its end).
 * Covers both ways a transaction starts: `transaction()` and, on PostgreSQL, `connection()`
 * (keyedTransaction).
 */
export function transactionWatch(db: Kysely<Database>): { kysely: Kysely<Database>; seen: () => { started: number; most: number } } {
  let started = 0;
  let now = 0;
  let most = 0;
  const watch = <T>(run: () => Promise<T>): Promise<T> => {
    started++;
    most = Math.max(most, ++now);
    return run().finally(() => now--);
  };
  const kysely = new Proxy(db, {
    get: (target, prop) => {
      if (prop === 'transaction' || prop === 'connection') {
        return () => {
          const builder = target[prop]();
          return { execute: <T>(fn: (trx: Executor) => Promise<T>) => watch(() => builder.execute(fn)) };
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { kysely, seen: () => ({ started, most }) };
}

/** The texts `run` has the repository send, from a connection of `db` that answers nothing. */
export async function recordedTexts(db: Kysely<Database>, run: (recorder: Executor) => Promise<unknown>): Promise<string[]> {
  return (await recordedStatements(db, run)).map((s) => s.sql);
}

/** The statements (text and parameters) `run` has the repository send, as {@link recordedTexts}. */
export async function recordedStatements(
  db: Kysely<Database>,
  run: (recorder: Executor) => Promise<unknown>,
): Promise<Array<{ sql: string; parameters: readonly unknown[] }>> {
  const statements: Array<{ sql: string; parameters: readonly unknown[] }> = [];
  await db.connection().execute(async (conn) => {
    const recorder = new Proxy(conn, {
      get: (target, prop) => {
        if (prop === 'executeQuery') {
          return async (query: { sql: string; parameters: readonly unknown[] }) => {
            statements.push({ sql: query.sql, parameters: query.parameters });
            return { rows: [] };
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    await run(recorder);
  });
  return statements;
}

/** Parameters as the argument list of an EXECUTE: numbers as they are, text quoted. */
export function executeArgs(parameters: readonly unknown[]): string {
  return parameters.map((p) => (typeof p === 'number' ? String(p) : `'${String(p).replaceAll("'", "''")}'`)).join(', ');
}

export type PlanNode = Record<string, string | undefined> & { Plans?: PlanNode[] };

/** Every node of a PostgreSQL plan: the `QUERY PLAN` value of an EXPLAIN (FORMAT JSON). */
export function planNodes(explained: unknown): PlanNode[] {
  const all: PlanNode[] = [];
  const walk = (node: PlanNode) => {
    all.push(node);
    for (const child of node.Plans ?? []) walk(child);
  };
  walk((explained as { Plan: PlanNode }[])[0].Plan);
  return all;
}

/**
 * PostgreSQL: the plan PostgreSQL would keep for `text` as a named statement (its generic plan), as
 * EXPLAIN (FORMAT JSON) gives its `QUERY PLAN` value, run with `args` (SQL literals). `types` lists
 * the parameters' types, or PostgreSQL infers them from the text. `db` must be one connection or a
 * transaction; the prepared statement and the setting are gone afterwards.
 */
export function genericPlan(db: Executor, text: string, args: string, types?: string): Promise<unknown> {
  return planFor(db, 'force_generic_plan', text, args, types);
}

/**
 * PostgreSQL: the plan made for `text` with `args` themselves, as for an unnamed statement or a
 * named statement's first runs (a custom plan); otherwise as {@link genericPlan}.
 */
export function customPlan(db: Executor, text: string, args: string, types?: string): Promise<unknown> {
  return planFor(db, 'force_custom_plan', text, args, types);
}

async function planFor(db: Executor, mode: string, text: string, args: string, types?: string): Promise<unknown> {
  await sql.raw(`set plan_cache_mode = ${mode}`).execute(db);
  await sql.raw(`prepare kept_plan${types === undefined ? '' : `(${types})`} as ${text}`).execute(db);
  try {
    const { rows } = await sql.raw<{ 'QUERY PLAN': unknown }>(`explain (format json) execute kept_plan(${args})`).execute(db);
    return rows[0]['QUERY PLAN'];
  } finally {
    await sql.raw('deallocate kept_plan').execute(db);
    await sql.raw('reset plan_cache_mode').execute(db);
  }
}

/**
 * PostgreSQL: `text` prepared on one connection of `db` and run there, first under EXPLAIN ANALYZE
 * with `args`, then once with each of `more`: the analyzed plan, and how many of the runs used the
 * plan PostgreSQL keeps (`generic_plans`; it decides after five runs planned for their values).
 */
export async function keptRuns(
  db: Kysely<Database>,
  text: string,
  args: string,
  more: string[],
): Promise<{ analyzed: unknown; genericPlans: number }> {
  return db.connection().execute(async (conn) => {
    await sql.raw(`prepare kept_run as ${text}`).execute(conn);
    try {
      const { rows } = await sql.raw<{ 'QUERY PLAN': unknown }>(`explain (analyze, format json) execute kept_run(${args})`).execute(conn);
      for (const a of more) await sql.raw(`execute kept_run(${a})`).execute(conn);
      const plans = await sql<{ generic_plans: string }>`select generic_plans from pg_prepared_statements where name = 'kept_run'`.execute(
        conn,
      );
      return { analyzed: rows[0]['QUERY PLAN'], genericPlans: Number(plans.rows[0].generic_plans) };
    } finally {
      await sql.raw('deallocate kept_run').execute(conn);
    }
  });
}

/**
 * A Kysely plugin that, once the first query whose node (as JSON) `matches` has answered, runs
 * `meanwhile` before the caller sees the answer: another connection's change lands between a read
 * and what the caller does with it, with no timing involved.
 */
export function afterFirstRead(matches: (node: string, kind: string) => boolean, meanwhile: () => Promise<void>): KyselyPlugin {
  const reads = new Set<string>();
  let done = false;
  return {
    transformQuery: (args) => {
      if (!done && matches(JSON.stringify(args.node), args.node.kind)) reads.add(args.queryId.queryId);
      return args.node;
    },
    transformResult: async (args) => {
      if (reads.has(args.queryId.queryId) && !done) {
        done = true;
        await meanwhile();
      }
      return args.result;
    },
  };
}
