import { isExpired, mergeTokens, needsRefresh, type Session } from './session';
import type { TokenPair } from './types';

const KEY = 'parley.session';
const listeners = new Set<() => void>();
let session: Session | null = load();
let refreshing: Promise<void> | null = null;

function load(): Session | null {
  try {
    const raw = localStorage.getItem(KEY);
    return raw ? (JSON.parse(raw) as Session) : null;
  } catch {
    return null;
  }
}

export function getSession(): Session | null {
  return session;
}

export function onSessionChange(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function setTokens(pair: TokenPair | null): void {
  session = pair ? mergeTokens(session, pair) : null;
  if (session) localStorage.setItem(KEY, JSON.stringify(session));
  else localStorage.removeItem(KEY);
  for (const fn of listeners) fn();
}

/** One invalid part of a request, as a 400 names it (`body.actions.1.text`; docs/api/errors.md). */
export interface ErrorDetail {
  path: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
    /** Which fields a 400 refused (`body.color`), as docs/api/errors.md describes. */
    readonly details: ErrorDetail[] = [],
  ) {
    super(message);
  }
}

const now = () => Math.floor(Date.now() / 1000);

async function refresh(): Promise<void> {
  const s = session;
  if (!s || isExpired(s, now())) {
    setTokens(null);
    throw new ApiError(401, 'Session expired', 'unauthorized');
  }
  const res = await fetch('/v1.3/auth/tokens', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ refreshToken: s.refresh }),
  });
  if (!res.ok) {
    setTokens(null);
    throw new ApiError(401, 'Session expired', 'unauthorized');
  }
  setTokens((await res.json()) as TokenPair);
}

/** Renews the access token once for every caller waiting on it. */
export function ensureFresh(force = false): Promise<void> {
  if (!session) return Promise.reject(new ApiError(401, 'Not signed in', 'unauthorized'));
  if (!force && !needsRefresh(session, now())) return Promise.resolve();
  refreshing ??= refresh().finally(() => {
    refreshing = null;
  });
  return refreshing;
}

export interface ApiResult<T> {
  data: T;
  total: number | null;
}

interface Options {
  body?: unknown;
  form?: FormData;
  auth?: boolean;
  signal?: AbortSignal;
}

/** One call of the /v1.3 API; renews the token first when needed and once after a 401. */
export async function request<T>(method: string, path: string, opts: Options = {}): Promise<ApiResult<T>> {
  const auth = opts.auth !== false;
  const send = async (): Promise<Response> => {
    const headers: Record<string, string> = {};
    if (auth && session) headers.authorization = `Bearer ${session.access}`;
    let body: BodyInit | undefined;
    if (opts.form) body = opts.form;
    else if (opts.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(opts.body);
    }
    return fetch(`/v1.3${path}`, { method, headers, body, signal: opts.signal });
  };
  if (auth) await ensureFresh();
  let res = await send();
  if (res.status === 401 && auth) {
    await ensureFresh(true);
    res = await send();
  }
  const text = await res.text();
  let data: unknown;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (!res.ok) {
    const err = data as { error?: string; code?: string; details?: ErrorDetail[] } | undefined;
    if (res.status === 401 && auth) setTokens(null);
    throw new ApiError(res.status, err?.error ?? res.statusText, err?.code, Array.isArray(err?.details) ? err.details : []);
  }
  const total = res.headers.get('x-total-count');
  return { data: data as T, total: total === null ? null : Number(total) };
}

export const api = {
  get: async <T>(path: string, signal?: AbortSignal) => (await request<T>('GET', path, { signal })).data,
  post: async <T>(path: string, body?: unknown) => (await request<T>('POST', path, { body })).data,
  put: async <T>(path: string, body?: unknown) => (await request<T>('PUT', path, { body })).data,
  del: async <T>(path: string) => (await request<T>('DELETE', path)).data,
};

/** Builds a query string with repeated parameters (`tags=a&tags=b`). */
export function query(params: Record<string, string | number | boolean | Array<string | number> | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) for (const x of v) q.append(k, String(x));
    else q.append(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
