/**
 * Domain errors carry an HTTP-ish status and a machine code (docs/api/errors.md). Services throw them;
 * the API's error handler turns them into the version's error body. Services never see HTTP.
 */
export interface ErrorDetail {
  path: string;
  message: string;
}

export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly details?: ErrorDetail[],
    /** Seconds, for 429 answers. */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const invalid = (message: string, details?: ErrorDetail[]) => new AppError(400, 'validation_failed', message, details);

export const unauthorized = (message = 'Unauthorized') => new AppError(401, 'unauthorized', message);

export const forbidden = (message = 'Forbidden') => new AppError(403, 'forbidden', message);

export const notFound = (message = 'Not found') => new AppError(404, 'not_found', message);

export const conflict = (message: string, code = 'conflict') => new AppError(409, code, message);

export const rateLimited = (retryAfter: number, message = 'Too many requests', code = 'rate_limited') =>
  new AppError(429, code, message, undefined, retryAfter);

export const accountExpired = () => new AppError(402, 'account_expired', 'The account plan has expired');

export const signupClosed = () => new AppError(403, 'signup_closed', 'Sign-up is closed on this installation');
