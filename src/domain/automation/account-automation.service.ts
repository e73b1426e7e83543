import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import { invalid } from '../errors.js';
import { requireOwner } from '../policy/policy.js';
import * as repo from './account-automation.repo.js';
import { WEEK_DAYS, workingHoursProblems, type TimeRange, type WeekDay, type WorkingHours } from './working-hours.js';

/** As the API takes it: each range two times. */
export interface WorkingHoursInput {
  timezone: string;
  week: Partial<Record<WeekDay, string[][]>>;
  holidays?: string[];
}

/** The first-response target as the API answers it. */
export interface FirstResponseTarget {
  minutes: number | null;
}

/**
 * The account's working hours and first-response target (docs/api/automation.md). Working hours
 * are the owner's; the target is read by every employee (the lead list and reports use it) and
 * set by the owner.
 */
export class AccountAutomationService {
  constructor(private readonly deps: Deps) {}

  async workingHours(auth: AuthContext): Promise<WorkingHours> {
    requireOwner(auth);
    return repo.workingHoursOf(this.deps.db.kysely, auth.accountId);
  }

  /** Replaces the working hours; a bad time zone, range or date: 400 naming it, nothing stored. */
  async setWorkingHours(auth: AuthContext, input: WorkingHoursInput): Promise<WorkingHours> {
    requireOwner(auth);
    // The schema holds each range to two times.
    const week = Object.fromEntries(WEEK_DAYS.flatMap((d) => (input.week[d] ? [[d, input.week[d] as TimeRange[]]] : [])));
    const hours: WorkingHours = { timezone: input.timezone, week, holidays: [...new Set(input.holidays ?? [])].sort() };
    const problems = workingHoursProblems(hours);
    if (problems.length) throw invalid('Invalid working hours', problems);
    await repo.saveAccountAutomation(this.deps.db.kysely, auth.accountId, { working_hours: JSON.stringify(hours) }, this.deps.clock.now());
    return hours;
  }

  async firstResponseTarget(auth: AuthContext): Promise<FirstResponseTarget> {
    return { minutes: await repo.firstResponseTargetOf(this.deps.db.kysely, auth.accountId) };
  }

  /** Sets the target (minutes) or removes it (null). */
  async setFirstResponseTarget(auth: AuthContext, input: FirstResponseTarget): Promise<FirstResponseTarget> {
    requireOwner(auth);
    await repo.saveAccountAutomation(this.deps.db.kysely, auth.accountId, { first_response_minutes: input.minutes }, this.deps.clock.now());
    return { minutes: input.minutes };
  }
}
