import type { RateLimiter } from '../auth/rate-limiter.js';
import { rateLimited } from '../errors.js';

/** A hit on `limiter` for `key`: 429 (with the wait) past the limit. */
export async function limit(limiter: RateLimiter, key: string): Promise<void> {
  const wait = await limiter.hit(key);
  if (wait) throw rateLimited(wait, 'Too many requests, slow down');
}
