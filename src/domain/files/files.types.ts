import type { Readable } from 'node:stream';
import type { UploadShape } from '../channels/integration-types.js';

/** An uploaded file as the domain knows it. */
export interface StoredFile {
  /** 128 random bits, base64url (22 characters): the capability in the public URL. */
  id: string;
  accountId: number;
  /** Per-account integer alias: the `id` of the `id-url` media shape. */
  num: number;
  name: string;
  mime: string;
  size: number;
  /** Hex MD5 of the bytes. */
  md5: string;
  /**
   * Public URL: `<PARLEY_PUBLIC_URL>/files/<id>/<urlencoded name>`, or the path alone
   * (`/files/<id>/<name>`) when PARLEY_PUBLIC_URL is not configured.
   */
  url: string;
  /** Unix milliseconds. */
  createdAt: number;
}

/** `photo` for images, `doc` for everything else (the upload answer, docs/api/messaging.md "Upload"). */
export type UploadType = 'photo' | 'doc';

/** docs/api/resources.md "Uploaded media object", one shape per group of integration types. */
export type MediaObject =
  | { id: number; url: string }
  | { type: string; filename: string; src: string }
  | { parts: number; fileId: string; mime: string; filename: string; md5: string }
  | { mime: string; name: string; url: string; type: string; size: string }
  | { mime: string; name: string; path: string };

/** One part of an upload form, as the HTTP face hands it over (no HTTP types here). */
export type UploadPart =
  | { kind: 'field'; name: string; value: string; truncated: boolean }
  | {
      kind: 'file';
      name: string;
      filename: string | undefined;
      /** The part's own Content-Type as sent. */
      contentType: string;
      stream: Readable;
      /** True when the parser cut the stream short at its own limit. */
      truncated?: () => boolean;
    };

export interface Upload {
  file: StoredFile;
  type: UploadType;
  shape: UploadShape;
  integrationId: number;
}
