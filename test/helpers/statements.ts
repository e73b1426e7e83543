import type { KyselyPlugin } from 'kysely';

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
