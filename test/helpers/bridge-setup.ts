import type { AddressInfo } from 'node:net';
import type { Harness, SignedUp } from './harness.js';
import { FakeBridge } from './fake-bridge.js';

/** The harness's server on a loopback port: bridges need a real socket. */
export async function listen(h: Harness): Promise<string> {
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
}

/** Connects a personal-account integration through the API: its id and bridge token (shown once). */
export async function connectPersonal(
  h: Harness,
  owner: SignedUp,
  type = 'msgrb_personal',
): Promise<{ id: number; token: string; body: any }> {
  const res = await h.request({ method: 'POST', url: '/v1.3/integrations', token: owner.access, payload: { type } });
  if (res.statusCode !== 200) throw new Error(`connect failed: ${res.statusCode} ${res.body}`);
  const body = res.json();
  return { id: body.id, token: body.bridge.token, body };
}

/** A bridge connected, logged in, and seen as active by Parley. */
export async function activeBridge(h: Harness, base: string, integrationId: number, token: string): Promise<FakeBridge> {
  const bridge = await FakeBridge.connect(base, integrationId, token);
  await bridge.login({ login: 'me', externalId: `acc-${integrationId}` });
  await waitForStatus(h, integrationId, 'active');
  return bridge;
}

export async function waitForStatus(h: Harness, integrationId: number, status: string): Promise<void> {
  const { vi } = await import('vitest');
  await vi.waitFor(
    async () => {
      const row = await h.database.db.kysely
        .selectFrom('integrations')
        .select('status')
        .where('id', '=', integrationId)
        .executeTakeFirstOrThrow();
      if (row.status !== status) throw new Error(`status ${row.status}, waiting for ${status}`);
    },
    { timeout: 5000, interval: 10 },
  );
}

/** A harness on loopback (bridges need a socket) with a signed-up owner. */
export async function openBridgeSuite(
  sendTimeoutMs: number,
  opts: { listen?: boolean } = {},
): Promise<{ h: Harness; base: string; owner: SignedUp }> {
  const { createHarness } = await import('./harness.js');
  const h = await createHarness({ env: { PARLEY_SEND_TIMEOUT_MS: String(sendTimeoutMs) }, listen: opts.listen });
  const base = await listen(h);
  return { h, base, owner: await h.signUp() };
}

/** The owner with a fresh access token (tests move the clock across days). */
export async function freshLogin(h: Harness, owner: SignedUp): Promise<SignedUp> {
  const res = await h.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login: owner.login, pass: owner.pass } });
  return { ...owner, access: res.json().accessToken.token };
}
