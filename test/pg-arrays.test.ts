import { createRequire } from 'node:module';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bigintArray, numberLiteral, textArray, textLiteral } from '../src/db/pg-arrays.js';
import { createTestDatabase, DIALECT, type TestDatabase } from './helpers/database.js';

/**
 * The array parameters of batch statements are sent as literals written in db/pg-arrays.ts: the
 * text pg writes for a JavaScript array (numbers unquoted), and PostgreSQL reads back every value
 * as it was.
 */
const texts = ['', 'plain', 'a "quoted" word', 'back\\slash', '\\"', '{braces}', 'a,b', 'NULL', ' spaced ', 'тег ✓', null];
const numbers = [1, -2, 0, 9007199254740991, null, 42];

const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue(v: unknown): unknown };

describe('pg array literals', () => {
  it('are the text pg writes for the same arrays (numbers unquoted)', () => {
    expect(textLiteral(texts)).toBe(prepareValue(texts));
    // pg quotes numbers too; PostgreSQL reads either the same.
    expect(numberLiteral(numbers)).toBe((prepareValue(numbers) as string).replaceAll('"', ''));
    expect(textLiteral([])).toBe(prepareValue([]));
    expect(numberLiteral([])).toBe(prepareValue([]));
  });
});

if (DIALECT === 'postgres')
  describe('pg array literals on PostgreSQL', () => {
    let t: TestDatabase;
    beforeAll(async () => {
      t = await createTestDatabase();
    });
    afterAll(async () => {
      await t.drop();
    });

    it('give back every value as it was, in order', async () => {
      const db = t.db.kysely;
      const read = await sql<{ v: string | null }>`select v from unnest(${textArray(texts)}) with ordinality as u(v, n) order by n`.execute(
        db,
      );
      expect(read.rows.map((r) => r.v)).toEqual(texts);
      const ids = await sql<{
        v: number | null;
      }>`select v from unnest(${bigintArray(numbers)}) with ordinality as u(v, n) order by n`.execute(db);
      expect(ids.rows.map((r) => r.v)).toEqual(numbers);
    });
  });
