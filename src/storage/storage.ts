import type { Readable } from 'node:stream';

/**
 * Where uploaded files live. The domain knows a file by the key `put` returns and nothing else
 * about where it is kept, so object storage can replace the local disk without touching it.
 */
export interface FileStorage {
  /**
   * Stores a stream under a new key. The stored object becomes visible only when it is complete:
   * a failed or refused put (the source failed, the size limit was passed) leaves nothing behind.
   * Throws {@link FileTooLargeError} when the source is longer than `maxBytes`.
   */
  put(source: Readable | AsyncIterable<Uint8Array>, options: PutOptions): Promise<PutResult>;
  /** The stored bytes (inclusive `range`, when given), or undefined when the key holds nothing. */
  open(key: string, range?: ByteRange): Promise<Readable | undefined>;
  /** Removes a stored object; removing a missing one is not an error. */
  delete(key: string): Promise<void>;
}

export interface PutOptions {
  /** The file's name and type: metadata for stores that keep it (the local disk does not). */
  name: string;
  mime: string;
  maxBytes?: number;
}

export interface PutResult {
  key: string;
  size: number;
  /** Hex MD5 of the stored bytes. */
  md5: string;
}

/** Inclusive byte offsets, as in an HTTP Range header. */
export interface ByteRange {
  start: number;
  end: number;
}

export class FileTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`The file is larger than ${maxBytes} bytes`);
    this.name = 'FileTooLargeError';
  }
}
