import { createQueryId, type Compilable, type CompiledQuery } from 'kysely';
import { dialectOf, type DialectName, type Executor } from './database.js';

/** Stands for the i-th argument of a prepared query in the query built once. */
class Arg {
  constructor(readonly index: number) {}
}

type Slot = { arg: number } | { value: unknown };

interface Compiled {
  query: CompiledQuery['query'];
  sql: string;
  slots: Slot[];
}

/**
 * A query of a hot path, built and compiled once per dialect and then run with new arguments.
 * Building and compiling a Kysely query costs 8-20 us, more than running most of ours in SQLite;
 * the ingest pipeline runs a dozen per message. `build` writes `arg(i)` where the i-th argument
 * goes (values only: never in `in` lists, identifiers, or shapes that change with the arguments);
 * everything else it writes is fixed. Works in a transaction as outside one.
 */
export function prepared<R>(
  // biome-ignore lint/suspicious/noExplicitAny: a placeholder stands where a value of any column type goes
  build: (db: Executor, arg: (index: number) => any, dialect: DialectName) => Compilable<R>,
): (db: Executor, ...args: unknown[]) => Promise<R[]> {
  const byDialect = new Map<DialectName, Compiled>();
  return async (db, ...args) => {
    const dialect = dialectOf(db);
    let compiled = byDialect.get(dialect);
    if (!compiled) {
      const query = build(db, (index) => new Arg(index), dialect).compile();
      compiled = {
        query: query.query,
        sql: query.sql,
        slots: query.parameters.map((p) => (p instanceof Arg ? { arg: p.index } : { value: p })),
      };
      byDialect.set(dialect, compiled);
    }
    const parameters = compiled.slots.map((slot) => ('arg' in slot ? args[slot.arg] : slot.value));
    const result = await db.executeQuery<R>({ query: compiled.query, sql: compiled.sql, parameters, queryId: createQueryId() });
    return result.rows;
  };
}
