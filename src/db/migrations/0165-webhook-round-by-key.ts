import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * PostgreSQL: `parley_webhook_round` (migration 0145) with the record's update of the deliveries
 * reading each row's outcome by key (a JSON object of the outcomes by delivery id) instead of
 * joining the JSON rows: its generic plan looped over every outcome for each updated row, so a
 * round recording n sends cost n * n row visits (a record of 256 outcomes, at best on a loaded
 * machine: ~40 against 12-23 ms). Otherwise unchanged.
 */
export const webhookRoundByKey: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    await sql`create or replace function parley_webhook_round(
        p_outcomes jsonb, p_now bigint, p_worker text, p_disable_since bigint,
        p_claim_now bigint, p_lease bigint, p_per_endpoint int, p_limit int)
      returns table (id bigint, webhook_id bigint, event_id bigint, message_id text, attempts int, lease_until bigint,
        url text, secret text, api_version text, type_names text, payload text)
      language plpgsql
      set plan_cache_mode = force_generic_plan
      set enable_seqscan = off
      as $$
      #variable_conflict use_column
      declare
        v_ids bigint[];
        v_by_id jsonb;
      begin
        if p_outcomes is not null then
          -- The deliveries are looked up by these keys: a join with the JSON rows (estimated at 100
          -- whatever their number) was planned as a pass over the whole table while it was small,
          -- and the plan kept as it grew. Each updated row reads its outcome by key from v_by_id:
          -- joined with the JSON rows, the update read all of them again for every row (a nested
          -- loop: rounds of n outcomes cost n * n).
          select array_agg((o ->> 'id')::bigint), jsonb_object_agg(o ->> 'id', o) into v_ids, v_by_id
          from jsonb_array_elements(p_outcomes) o;
          with v as (
            select * from jsonb_to_recordset(p_outcomes)
              as v(id bigint, webhook_id bigint, lease bigint, attempts integer, code integer, ms integer, error text, status text, next_at bigint)
          ),
          kept as (select d.id from deliveries d where d.id = any(v_ids) order by d.id for update),
          tried as (
            insert into delivery_attempts (delivery_id, at, status_code, duration_ms, error)
            select v.id, p_now, v.code, v.ms, v.error from v join kept on kept.id = v.id
          ),
          moved as (
            update deliveries set
              attempts = (v_by_id -> deliveries.id::text ->> 'attempts')::integer,
              last_status_code = (v_by_id -> deliveries.id::text ->> 'code')::integer,
              last_error = v_by_id -> deliveries.id::text ->> 'error',
              lease_until = null, leased_by = null,
              status = coalesce(v_by_id -> deliveries.id::text ->> 'status', deliveries.status),
              delivered_at = case when v_by_id -> deliveries.id::text ->> 'status' = 'delivered' then p_now else deliveries.delivered_at end,
              next_attempt_at = coalesce((v_by_id -> deliveries.id::text ->> 'next_at')::bigint, deliveries.next_attempt_at)
            where deliveries.id = any(v_ids) and deliveries.leased_by = p_worker
              and deliveries.lease_until = (v_by_id -> deliveries.id::text ->> 'lease')::bigint
          ),
          health as (
            select v.webhook_id, bool_or(v.status is not distinct from 'delivered') as ok from v join kept on kept.id = v.id group by v.webhook_id
          ),
          healthy as (
            update webhooks set failing_since = null from health e
            where webhooks.id = e.webhook_id and e.ok and webhooks.failing_since is not null
          )
          update webhooks set failing_since = coalesce(webhooks.failing_since, p_now),
            status = case when webhooks.status = 1 and webhooks.failing_since <= p_disable_since then 0 else webhooks.status end
          from health e
          where webhooks.id = e.webhook_id and not e.ok
            and (webhooks.failing_since is null or (webhooks.status = 1 and webhooks.failing_since <= p_disable_since));
        end if;
        if p_limit <= 0 then
          return;
        end if;
        return query
        with busy as (
          select d.webhook_id, count(*) as n from deliveries d
          where d.status = 'pending' and d.lease_until is not null and d.lease_until >= p_claim_now
          group by d.webhook_id
        ),
        endpoints as (
          select w.id, coalesce(b.n, 0) as n from webhooks w left join busy b on b.webhook_id = w.id
          where w.status = 1 and coalesce(b.n, 0) < p_per_endpoint
        ),
        candidates as (
          select c.id, c.webhook_id, c.next_attempt_at, ep.n from endpoints ep cross join lateral (
            select x.id, x.webhook_id, x.next_attempt_at from deliveries x
            where x.webhook_id = ep.id and x.status = 'pending' and (x.lease_until is null or x.lease_until < p_claim_now)
              and x.next_attempt_at <= p_claim_now
              and (x.lead_id is null or not exists (
                select 1 from deliveries e
                where e.webhook_id = x.webhook_id and e.lead_id = x.lead_id and e.status = 'pending' and e.id < x.id))
            order by x.next_attempt_at, x.id
            limit least(p_per_endpoint, p_limit)) c
        ),
        ready as (
          select c.id, c.next_attempt_at,
            c.n + row_number() over (partition by c.webhook_id order by c.next_attempt_at, c.id) as slot
          from candidates c
        ),
        picked as (
          select r.id from ready r where r.slot <= p_per_endpoint
          order by r.next_attempt_at, r.id
          limit p_limit
        ),
        locked as (
          select d.id from deliveries d
          where d.id in (select picked.id from picked) and d.status = 'pending' and (d.lease_until is null or d.lease_until < p_claim_now)
          for update skip locked
        )
        update deliveries set lease_until = p_lease, leased_by = p_worker
        where deliveries.id in (select locked.id from locked)
        returning deliveries.id, deliveries.webhook_id, deliveries.event_id, deliveries.message_id, deliveries.attempts,
          deliveries.lease_until,
          (select w.url from webhooks w where w.id = deliveries.webhook_id),
          (select w.secret from webhooks w where w.id = deliveries.webhook_id),
          (select w.api_version from webhooks w where w.id = deliveries.webhook_id),
          (select a.type_names from webhooks w join accounts a on a.id = w.account_id where w.id = deliveries.webhook_id),
          (select ev.payload from events ev where ev.id = deliveries.event_id);
      end;
      $$`.execute(db);
  },
};
