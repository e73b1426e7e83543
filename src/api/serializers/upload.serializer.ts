import type { VersionTraits } from '../versions.js';
import { mediaObject } from '../../domain/files/media.js';
import type { MediaObject, Upload, UploadType } from '../../domain/files/files.types.js';

export type UploadAnswer = { type: UploadType; media: MediaObject } | { type: UploadType; media: { type: UploadType; media: MediaObject } };

/**
 * The upload answer: `{type, media}`, with `media` in the upload shape of the integration type;
 * v1.1 nests it once more, `{type, media: {type, media}}` (docs/api/versions.md). A file URL that is
 * only a path (PARLEY_PUBLIC_URL not configured) is made absolute with the request's origin.
 */
export function serializeUpload(upload: Upload, traits: VersionTraits, origin: string | undefined): UploadAnswer {
  const url = upload.file.url.startsWith('/') && origin ? origin + upload.file.url : upload.file.url;
  const media = mediaObject(upload.file, upload.shape, url);
  return traits.uploadNestedTwice ? { type: upload.type, media: { type: upload.type, media } } : { type: upload.type, media };
}
