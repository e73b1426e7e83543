import { ChannelFailedError, ChannelOfflineError, ChannelRejectedError, ChannelTimeoutError } from '../channels/channel.js';
import { AppError } from '../errors.js';

/**
 * An adapter's failure as the error the API answers (docs/api/errors.md): refused 422, failed 502,
 * timed out 504. Anything else (a bug in an adapter) stays as it is and becomes a 500.
 */
export function channelAppError(err: unknown): unknown {
  if (err instanceof ChannelRejectedError) return new AppError(422, 'channel_rejected', err.message || 'The channel refused the request');
  if (err instanceof ChannelTimeoutError) return new AppError(504, 'channel_timeout', 'The channel did not answer in time');
  if (err instanceof ChannelOfflineError)
    return new AppError(502, 'channel_offline', err.message || 'No bridge is connected for this integration');
  if (err instanceof ChannelFailedError) return new AppError(502, 'channel_failed', 'The channel failed to answer');
  return err;
}

/** A failure of the channel (refused, failed, timed out, offline), as opposed to a bug or a rule of Parley's. */
export function isChannelError(err: unknown): boolean {
  return (
    err instanceof ChannelRejectedError ||
    err instanceof ChannelTimeoutError ||
    err instanceof ChannelOfflineError ||
    err instanceof ChannelFailedError
  );
}
