import type { UploadShape } from '../channels/integration-types.js';
import type { MediaObject, StoredFile, UploadType } from './files.types.js';

/** 16 random bytes in base64url. */
export const FILE_ID = /^[A-Za-z0-9_-]{22}$/;
/** A file URL or path, absolute or not: `.../files/<id>/...`. */
const FILE_URL = /(?:^|\/)files\/([A-Za-z0-9_-]{22})(?:[/?#]|$)/;

export function uploadTypeOf(mime: string): UploadType {
  return mime.startsWith('image/') ? 'photo' : 'doc';
}

/**
 * The path of a file's public URL (`/files/<id>/<urlencoded name>`). Only the id finds the file;
 * the name is there for whoever reads the URL, shortened (keeping its extension) to the 100
 * characters the router accepts in one path segment.
 */
export function filePath(id: string, name: string): string {
  return `/files/${id}/${encodeURIComponent(urlName(name))}`;
}

const MAX_URL_NAME = 100;

function urlName(name: string): string {
  if (name.length <= MAX_URL_NAME) return name;
  const dot = name.lastIndexOf('.');
  const ext = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : '';
  let stem = '';
  for (const char of name.slice(0, name.length - ext.length)) {
    if (stem.length + char.length + ext.length > MAX_URL_NAME) break;
    stem += char;
  }
  return stem + ext;
}

/**
 * The media object of an integration type's upload shape (docs/api/resources.md, Uploaded media object). `url` is the URL to put
 * in it (the file's public URL, made absolute by the caller when it knows how).
 */
export function mediaObject(file: StoredFile, shape: UploadShape, url: string): MediaObject {
  switch (shape) {
    case 'id-url':
      return { id: file.num, url };
    case 'type-filename-src':
      return { type: file.mime, filename: file.name, src: url };
    case 'parts':
      // Files here are never split: one piece.
      return { parts: 1, fileId: file.id, mime: file.mime, filename: file.name, md5: file.md5 };
    case 'mime-name-url':
      return { mime: file.mime, name: file.name, url, type: uploadTypeOf(file.mime), size: String(file.size) };
    case 'mime-name-path':
      return { mime: file.mime, name: file.name, path: filePath(file.id, file.name) };
  }
}

export type FileRef = { id: string } | { num: number };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Which file a media object names, whatever its shape: `fileId`, a file URL in `url`, `src` or
 * `path`, or the integer `id` alias. The v1.1 answer nests the media object once more
 * (`{type, media: {...}}`): that form is accepted too. Never throws.
 */
export function fileRefOf(media: unknown, depth = 0): FileRef | undefined {
  if (!isRecord(media)) return undefined;
  if (typeof media.fileId === 'string' && FILE_ID.test(media.fileId)) return { id: media.fileId };
  for (const key of ['url', 'src', 'path'] as const) {
    const value = media[key];
    if (typeof value !== 'string' || value.length > 4096) continue;
    const match = FILE_URL.exec(value);
    if (match) return { id: match[1] };
  }
  const { id } = media;
  if (typeof id === 'string' && FILE_ID.test(id)) return { id };
  const num = typeof id === 'string' && /^\d{1,16}$/.test(id) ? Number(id) : id;
  if (typeof num === 'number' && Number.isSafeInteger(num) && num > 0) return { num };
  if (depth === 0 && isRecord(media.media)) return fileRefOf(media.media, 1);
  return undefined;
}
