import { describe, expect, it } from 'vitest';
import {
  errorsAt,
  findPreset,
  isUnset,
  moveRule,
  presetOf,
  presetRule,
  type Rule,
  ruleBody,
  timeZones,
  toApiEnd,
  toFormEnd,
} from './automation';

const rule = (id: number, order: number, patch: Partial<Rule> = {}): Rule => ({
  id,
  order,
  name: `r${id}`,
  enabled: true,
  event: 'message.incoming',
  conditions: [],
  actions: [{ type: 'addTag', tag: 'x' }],
  ...patch,
});
const completed = new Set([40]);
const settings = { name: 'Preset', text: 'Back soon', days: 3, statusId: 40 };

describe('automation presets', () => {
  it('each preset the app creates is recognized as itself, whatever its name', () => {
    for (const kind of ['away', 'greeting', 'autoClose'] as const) {
      const created = { ...presetRule(kind, settings), name: 'renamed by the owner' };
      expect(presetOf(created, completed)).toBe(kind);
    }
  });

  it('auto-close waits the given days and moves to the chosen completed status', () => {
    const body = presetRule('autoClose', settings);
    expect(body).toMatchObject({ event: 'lead.idle', idleMinutes: 3 * 24 * 60, actions: [{ type: 'setStatus', statusId: 40 }] });
    // A lead.idle rule moving leads to a status that is not completed is no auto-close.
    expect(presetOf({ ...body, actions: [{ type: 'setStatus', statusId: 41 }] }, completed)).toBeNull();
  });

  it('a rule without the shape is no preset: a reply in working hours, a tag for new customers', () => {
    expect(
      presetOf(
        rule(1, 0, { conditions: [{ field: 'time.workingHours', op: 'is', value: true }], actions: [{ type: 'reply', text: 'hi' }] }),
        completed,
      ),
    ).toBeNull();
    expect(presetOf(rule(2, 0, { conditions: [{ field: 'customer.isNew', op: 'is', value: true }] }), completed)).toBeNull();
    expect(presetOf(rule(3, 0, { event: 'lead.created', actions: [{ type: 'reply', text: 'hello' }] }), completed)).toBe('greeting');
  });

  it('switching a stored preset on keeps its other parts and applies the text shown', () => {
    const stored = rule(5, 2, {
      enabled: false,
      conditions: [
        { field: 'time.workingHours', op: 'is', value: false },
        { field: 'integration.type', op: 'in', value: ['widget'] },
      ],
      actions: [
        { type: 'addTag', tag: 'night' },
        { type: 'reply', text: 'old' },
      ],
    });
    expect(findPreset([rule(1, 0), stored], 'away', completed)?.id).toBe(5);
    const body = presetRule('away', { ...settings, text: 'new text' }, stored);
    expect(body).toEqual({
      name: 'r5',
      enabled: true,
      event: 'message.incoming',
      conditions: stored.conditions,
      actions: [
        { type: 'addTag', tag: 'night' },
        { type: 'reply', text: 'new text' },
      ],
      order: 2,
    });
    expect('id' in body).toBe(false);
  });
});

describe('rule order and errors', () => {
  it('moving a rule numbers the list again and answers only the rules whose order changes', () => {
    const rules = [rule(1, 0), rule(2, 1), rule(3, 2)];
    expect(moveRule(rules, 3, -1).map((x) => [x.rule.id, x.order])).toEqual([
      [3, 1],
      [2, 2],
    ]);
    expect(moveRule(rules, 1, -1)).toEqual([]);
    // Equal orders (rules created with the same order) become distinct.
    const same = [rule(1, 0), rule(2, 0)];
    expect(moveRule(same, 2, -1).map((x) => [x.rule.id, x.order])).toEqual([[1, 1]]);
  });

  it('the body of a stored rule drops its id, and idleMinutes outside lead.idle', () => {
    const idle = rule(9, 0, { event: 'lead.idle', idleMinutes: 60 });
    expect(ruleBody(idle)).not.toHaveProperty('id');
    expect(ruleBody(idle, { event: 'lead.created' })).not.toHaveProperty('idleMinutes');
  });

  it('errorsAt picks the details of a part and of what lies under it, not of its neighbours', () => {
    const details = [
      { path: 'body.conditions.1.value', message: 'bad regex' },
      { path: 'body.conditions.10.value', message: 'other' },
      { path: 'body.name', message: 'empty' },
    ];
    expect(errorsAt(details, 'body.conditions.1')).toEqual(['bad regex']);
    expect(errorsAt(details, 'body.name')).toEqual(['empty']);
    expect(errorsAt(details, 'body.actions')).toEqual([]);
  });
});

describe('working hours', () => {
  it('the server\'s "never set" answer is told apart from hours the owner saved', () => {
    const always = {
      timezone: 'UTC',
      week: Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].map((d) => [d, [['00:00', '24:00']]])),
      holidays: [],
    } as never;
    expect(isUnset(always)).toBe(true);
    expect(isUnset({ timezone: 'UTC', week: { mon: [['09:00', '18:00']] }, holidays: [] })).toBe(false);
    expect(isUnset({ timezone: 'Europe/Berlin', week: (always as { week: never }).week })).toBe(false);
  });

  it('midnight at the end of a range is 00:00 in the form and 24:00 to the API', () => {
    expect(toApiEnd('00:00')).toBe('24:00');
    expect(toApiEnd('18:00')).toBe('18:00');
    expect(toFormEnd('24:00')).toBe('00:00');
  });

  it('the time zone list holds the current zone and UTC', () => {
    expect(timeZones('Europe/Berlin')).toContain('Europe/Berlin');
    expect(timeZones('Mars/Olympus')[0]).toBe('Mars/Olympus');
    expect(timeZones('UTC')).toContain('UTC');
  });
});
