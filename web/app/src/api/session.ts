import type { TokenPair } from './types';

/** The signed-in session, kept in localStorage so a reload stays signed in. */
export interface Session {
  access: string;
  /** Unix seconds. */
  accessExp: number;
  refresh: string;
  refreshExp: number;
}

/** Merges a token answer into the session: /auth/tokens may answer only a new access token. */
export function mergeTokens(prev: Session | null, pair: TokenPair): Session {
  return {
    access: pair.accessToken.token,
    accessExp: pair.accessToken.exp,
    refresh: pair.refreshToken?.token ?? prev?.refresh ?? '',
    refreshExp: pair.refreshToken?.exp ?? prev?.refreshExp ?? 0,
  };
}

/** The access token should be renewed before a request when it expires within a minute. */
export function needsRefresh(session: Session, nowSeconds: number): boolean {
  return session.accessExp - nowSeconds < 60;
}

/** A session whose refresh token has expired cannot be renewed: sign in again. */
export function isExpired(session: Session, nowSeconds: number): boolean {
  return !session.refresh || session.refreshExp <= nowSeconds;
}
