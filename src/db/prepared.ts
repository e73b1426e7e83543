import { createQueryId, type Compilable, type CompiledQuery } from 'kysely';
import { dialectOf, nameStatement, type DialectName, type Executor } from './database.js';

/** Stands for the named parameter of a prepared query in the query built once. */
class Param {
  constructor(readonly name: string) {}
}

type Slot = { param: string } | { value: unknown };

interface Compiled {
  query: CompiledQuery['query'];
  sql: string;
  slots: Slot[];
}

/** The placeholders a build writes: each named parameter, typed as the value it stands for. */
function placeholders<P>(): P {
  return new Proxy({} as object, { get: (_target, name) => new Param(String(name)) }) as P;
}

/**
 * A query of a hot path, built and compiled once per dialect and then run with new parameters.
 * Building and compiling a Kysely query costs 8-20 us, more than running most of ours in SQLite;
 * the ingest pipeline runs a dozen per message. Parameters are named and typed: `build` declares
 * them as its second argument's type (`(db, p: { accountId: number; leadId: number }) => ...`) and
 * writes `p.leadId` where a value goes, so Kysely checks each against its column, and a call
 * passes one object of that type, so two ids cannot trade places unseen. Values only: never in
 * `in` lists, identifiers, or shapes that change with the parameters; everything else the build
 * writes is fixed. Works in a transaction as outside one.
 */
export function prepared<P extends object, R>(
  build: (db: Executor, p: P, dialect: DialectName) => Compilable<R>,
): (db: Executor, params: P) => Promise<R[]> {
  const byDialect = new Map<DialectName, Compiled>();
  return async (db, params) => {
    const dialect = dialectOf(db);
    let compiled = byDialect.get(dialect);
    if (!compiled) {
      const query = build(db, placeholders<P>(), dialect).compile();
      compiled = {
        query: query.query,
        sql: query.sql,
        slots: query.parameters.map((p) => (p instanceof Param ? { param: p.name } : { value: p })),
      };
      byDialect.set(dialect, compiled);
      if (dialect === 'postgres') nameStatement(compiled.sql);
    }
    const values = params as Record<string, unknown>;
    const parameters = compiled.slots.map((slot) => ('param' in slot ? values[slot.param] : slot.value));
    const result = await db.executeQuery<R>({ query: compiled.query, sql: compiled.sql, parameters, queryId: createQueryId() });
    return result.rows;
  };
}
