import type { Executor } from '../src/db/database.js';
import { prepared } from '../src/db/prepared.js';

/**
 * Compile-time checks of src/db/prepared.ts, never run: `npm run typecheck` compiles this file, and
 * each `@ts-expect-error` fails it when the line below compiles. With untyped positional arguments
 * (`...args: unknown[]`, before) every one of them would compile, and the typecheck would fail.
 */
export function preparedParametersAreTyped(db: Executor): void {
  const leadOf = prepared((kdb, p: { accountId: number; leadId: number }) =>
    kdb.selectFrom('leads').select('id').where('id', '=', p.leadId).where('account_id', '=', p.accountId),
  );
  const accountId = 1;
  const leadId = 2;
  void leadOf(db, { accountId, leadId });
  // @ts-expect-error positional ids, the order a swap gets wrong, are refused
  void leadOf(db, leadId, accountId);
  // @ts-expect-error a misnamed id is refused (no `lead` parameter)
  void leadOf(db, { accountId, lead: leadId });
  // @ts-expect-error a missing id is refused
  void leadOf(db, { leadId });
  // @ts-expect-error a value of the wrong type for its parameter is refused
  void leadOf(db, { accountId: 'acc_1', leadId });
  // @ts-expect-error a parameter whose type is not its column's is refused in the build (name is text)
  prepared((kdb, p: { name: number }) => kdb.selectFrom('accounts').select('id').where('name', '=', p.name));
}
