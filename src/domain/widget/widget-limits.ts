import type { RateLimiter } from '../auth/rate-limiter.js';
import { rateLimited } from '../errors.js';

/** A hit on `limiter` for `key`: 429 (with the wait) past the limit. */
export async function limit(limiter: RateLimiter, key: string): Promise<void> {
  const wait = await limiter.hit(key);
  if (wait) throw rateLimited(wait, 'Too many requests, slow down');
}

/** A hit on `first`, then, when it was within its limit, on `then`: 429 (with the wait) past either. */
export async function limitThen(first: RateLimiter, key: string, then: RateLimiter, thenKey: string): Promise<void> {
  const wait = await first.hitThen(key, then, thenKey);
  if (wait) throw rateLimited(wait, 'Too many requests, slow down');
}
