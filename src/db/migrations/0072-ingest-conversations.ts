import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * PostgreSQL: an ingest batch's senders locked and their conversations read in one round trip
 * (docs/performance.md). The batch locked the senders' profiles in one
 * statement and read the conversations in a second one: the read must come after the locks in a
 * statement of its own, whose snapshot sees what the transactions that held them committed (a
 * sender's concurrent message, its new lead). A volatile function's statements each take a
 * snapshot of their own, so `parley_ingest_conversations` runs the two in one call, and the lane's
 * lock is held for one round trip less per batch.
 *
 * Its arguments are one entry per sender (the first message of each in the batch): integration,
 * sender's id, provider id of the message, channel type and id. One row per entry, in their order
 * (`ord`, from 1): the sender's profile (null for a sender seen first), the message stored before
 * under its provider id (a redelivery), the channel, the latest lead of the sender's customer on
 * the integration, and ids from the tables' sequences for the rows the message may create (unused
 * ids are skipped). The statements refer to their arguments as $1-$5, so the test suite plans each
 * as the function does (test/hot-path-plans.test.ts).
 */
export const INGEST_LOCK_SENDERS = `select 1 from (select distinct * from unnest($1::bigint[], $2::text[])
    as k(integration_id, social_id) order by 1, 2) k
  cross join lateral (select 1 from profiles where profiles.integration_id = k.integration_id
    and profiles.social_id = k.social_id for update) p`;

/** The ids' sequence of `table`, looked up once per statement (an InitPlan), not at every row. */
const nextId = (table: string) => `nextval((select pg_get_serial_sequence('${table}', 'id')::regclass))`;

export const INGEST_READ_CONVERSATIONS = `select k.ord::int as ord, to_jsonb(p) as profile,
    d.id as duplicate_id, d.lead_id as duplicate_lead_id, to_jsonb(s) as source, to_jsonb(l) as lead,
    ${nextId('messages')} as message_id,
    case when p.id is null then ${nextId('customers')} end as customer_id,
    case when p.id is null then ${nextId('profiles')} end as profile_id,
    case when p.id is null then ${nextId('leads')} end as lead_id,
    case when p.id is null and s.id is null then ${nextId('sources')} end as source_id
  from unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[]) with ordinality
    as k(integration_id, social_id, external_id, channel_type, channel_id, ord)
  left join lateral (select * from profiles where profiles.integration_id = k.integration_id
    and profiles.social_id = k.social_id limit 1) p on true
  left join lateral (select id, lead_id from messages where messages.integration_id = k.integration_id
    and messages.external_id = k.external_id limit 1) d on true
  left join lateral (select * from sources where sources.integration_id = k.integration_id and sources.type = k.channel_type
    and sources.external_id = k.channel_id limit 1) s on true
  left join lateral (select * from leads where leads.customer_id = p.customer_id and leads.integration_id = k.integration_id
    order by leads.id desc limit 1) l on true
  order by k.ord`;

/**
 * The statement creating `parley_ingest_conversations` with `read` as its reading statement, whose
 * profile, source and lead columns are of `rowType` (migration 0078 makes them json).
 */
export function ingestConversationsFunction(read: string, rowType: 'jsonb' | 'json'): string {
  return `create or replace function parley_ingest_conversations(bigint[], text[], text[], text[], text[])
      returns table (ord int, profile ${rowType}, duplicate_id bigint, duplicate_lead_id bigint, source ${rowType}, lead ${rowType},
        message_id bigint, customer_id bigint, profile_id bigint, lead_id bigint, source_id bigint)
      language plpgsql volatile as $fn$
      #variable_conflict use_column
      begin
        -- The senders' profiles locked in key order, as every batch locks them.
        perform ${INGEST_LOCK_SENDERS.replace(/^select /, '')};
        -- A statement of its own: its snapshot is taken once the locks are held.
        return query ${read};
      end $fn$`;
}

export const ingestConversations: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    await sql.raw(ingestConversationsFunction(INGEST_READ_CONVERSATIONS, 'jsonb')).execute(db);
  },
};
