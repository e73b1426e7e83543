import { sql, type Kysely } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * `leads.responded_at`: when the answer that ended the lead's latest wait came, so that
 * `responseTime` can be counted in working time too (docs/api/automation.md "First-response
 * target"): the wait ran from `responded_at - response_time` to `responded_at`.
 *
 * Leads answered before the column existed get the time of their first outgoing message after
 * their latest incoming one, which is the message that set their `response_time`.
 *
 * PostgreSQL: `parley_store_sends` (0076-send-batch) again, now moving the leads' fields as
 * `afterOutgoing` (lead-lifecycle.ts) moves them: an automation rule's reply (no employee, its
 * customId starting with `automation-`) neither ends the wait nor sets `response_time`; the batch's first other
 * message for the lead does.
 */
export const respondedAt: ParleyMigration = {
  async up(db, kit) {
    await db.schema.alterTable('leads').addColumn('responded_at', kit.bigint).execute();
    await backfillRespondedAt(db);
    if (kit.dialect !== 'postgres') return;
    await sql`create or replace function parley_store_sends(
        p_now bigint, no_outgoing text[],
        m_lead bigint[], m_account bigint[], m_source bigint[], m_integration bigint[], m_external text[], m_text text[],
        m_url text[], m_attachments text[], m_user bigint[], m_custom text[], m_at bigint[],
        e_head text[], e_tail text[], k_lead bigint[], k_custom text[])
      returns table (message_id bigint, event_id bigint, deliveries int)
      language plpgsql
      set plan_cache_mode = force_generic_plan
      set enable_seqscan = off
      as $$
      #variable_conflict use_column
      declare
        locked int;
      begin
        select count(*) into locked from (select 1 from leads where id = any(m_lead) order by id for update) s;
        if locked <> (select count(distinct x) from unnest(m_lead) x) then
          raise exception 'a lead of the batch does not exist' using errcode = 'no_data_found';
        end if;
        if exists (select 1 from unnest(m_integration, m_external) k(integration_id, external_id)
            join held_delivery_statuses h on h.integration_id = k.integration_id and h.external_id = k.external_id) then
          return;
        end if;
        return query
        with v as (
          select nextval((select pg_get_serial_sequence('messages', 'id')::regclass)) as id, x.*
          from unnest(m_lead, m_account, m_source, m_integration, m_external, m_text, m_url, m_attachments, m_user, m_custom, m_at,
            e_head, e_tail) with ordinality
            as x(lead_id, account_id, source_id, integration_id, external_id, text, url, attachments, user_id, custom_id, at, head, tail, ord)
        ), m as (
          insert into messages (id, account_id, lead_id, source_id, integration_id, external_id, incoming, text, url, attachments,
            reply_to, preview, profile_id, user_id, custom_id, unread, created_at)
          select id, account_id, lead_id, source_id, integration_id, external_id, 0, text, url, attachments,
            null, null, null, user_id, custom_id, 0, at
          from v
          returning 1
        ), a as (
          select lead_id, max(at) as max_at, (array_agg(id order by at desc, ord desc))[1] as last_id,
            (array_agg(at order by ord) filter (where user_id is not null or custom_id is null or custom_id not like 'automation-%'))[1] as first_at
          from v group by lead_id
        ), l as (
          update leads set
            last_message_id = case when a.max_at >= leads.last_message_at or leads.last_message_id is null then a.last_id else leads.last_message_id end,
            last_message_at = case when a.max_at >= leads.last_message_at or leads.last_message_id is null then a.max_at else leads.last_message_at end,
            last_message_incoming = case when a.max_at >= leads.last_message_at or leads.last_message_id is null then 0 else leads.last_message_incoming end,
            response_time = case when leads.awaiting_since is null or a.first_at is null then leads.response_time
              else greatest(0, a.first_at - leads.awaiting_since) end,
            responded_at = case when leads.awaiting_since is null or a.first_at is null then leads.responded_at else a.first_at end,
            awaiting_since = case when a.first_at is null then leads.awaiting_since else null end,
            updated_at = p_now
          from a where leads.id = a.lead_id
          returning 1
        ), ev as (
          select nextval((select pg_get_serial_sequence('events', 'id')::regclass)) as id, v.id as message_id, v.account_id, v.lead_id, v.head, v.tail, v.ord
          from (select * from v order by ord) v
        ), e as (
          insert into events (id, account_id, type, lead_id, payload, created_at)
          select id, account_id, 'message.outgoing', lead_id, head || message_id || tail, p_now from ev
          returning 1
        ), d as (
          insert into deliveries (webhook_id, event_id, message_id, lead_id, next_attempt_at, created_at)
          select w.id, ev.id, 'msg_' || ev.id, ev.lead_id, p_now, p_now
          from ev join webhooks w on w.account_id = ev.account_id and w.status = 1 and w.api_version <> all(no_outgoing)
            and (w.events is null or (jsonb_typeof(w.events::jsonb) = 'array' and w.events::jsonb ? 'message.outgoing'))
          order by ev.ord, w.id
          returning event_id
        ), k as (
          delete from send_keys s using unnest(k_lead, k_custom) as r(lead_id, custom_id)
          where s.lead_id = r.lead_id and s.custom_id = r.custom_id
          returning 1
        )
        select ev.message_id, ev.id, (select count(*) from d where d.event_id = ev.id)::int
        from ev order by ev.ord;
      end $$`.execute(db);
  },
};

/** The answer's time of the leads answered before the column existed (see above). */
// biome-ignore lint/suspicious/noExplicitAny: a migration sees the schema of its own time (helpers.ts)
export async function backfillRespondedAt(db: Kysely<any>): Promise<void> {
  await sql`update leads set responded_at = (
      select min(o.created_at) from messages o
      where o.lead_id = leads.id and o.incoming = 0
        and o.created_at >= coalesce((select max(i.created_at) from messages i where i.lead_id = leads.id and i.incoming = 1), 0))
    where response_time is not null`.execute(db);
}
