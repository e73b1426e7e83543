import { expect } from 'vitest';
import type { InjectOptions } from 'fastify';
import { API_VERSIONS, type ApiVersion } from '../../src/api/versions.js';
import type { Harness, SignedUp } from './harness.js';
import type { ManagerFixture } from './fixtures.js';

/**
 * A role matrix (docs/api/auth.md): each route asked with no token, as a manager, as the owner of
 * another account and as the owner, under every version. A refused request must change nothing
 * (`snapshot` is compared before and after) and answer the version's error body.
 */
export type Actor = 'none' | 'manager' | 'other' | 'owner';

export interface Actors {
  owner: SignedUp;
  manager: ManagerFixture;
  other: SignedUp;
}

export interface MatrixCase {
  label: string;
  expect: Record<Actor, number>;
  /** Builds the request afresh for each version: the owner's request may use up what it acts on. */
  request: (version: ApiVersion) => Promise<Omit<InjectOptions, 'headers'>>;
}

const ORDER: Actor[] = ['none', 'manager', 'other', 'owner'];

export async function runRoleMatrix(h: Harness, actors: Actors, cases: MatrixCase[], snapshot: () => Promise<unknown>): Promise<void> {
  const tokens: Record<Actor, string | undefined> = {
    none: undefined,
    manager: actors.manager.access,
    other: actors.other.access,
    owner: actors.owner.access,
  };
  for (const version of API_VERSIONS) {
    for (const c of cases) {
      const req = await c.request(version);
      for (const actor of ORDER) {
        const label = `${version} ${c.label} as ${actor}`;
        const before = await snapshot();
        const res = await h.request({ ...req, token: tokens[actor] } as InjectOptions & { token?: string });
        expect(res.statusCode, `${label}: ${res.body}`).toBe(c.expect[actor]);
        if (res.statusCode >= 400) {
          const body = res.json();
          if (version === 'v1.1') expect(body.statusCode, label).toBe(res.statusCode);
          else expect(typeof body.code, label).toBe('string');
          expect(await snapshot(), `${label} changed nothing`).toEqual(before);
        }
      }
    }
  }
}
