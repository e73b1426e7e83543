/**
 * Media types of uploads (docs/api/messaging.md): the type a client declares is checked against the
 * file's leading bytes. A declared type we know a signature for must show that signature; types
 * with no signature (text/plain, text/csv, application/json...) are taken as declared; types a
 * browser could run as script when the file is served are refused outright.
 */

/** How many leading bytes the checks below need (the longest looks at offset 8..12). */
export const SNIFF_BYTES = 64;

type Test = (b: Uint8Array) => boolean;

const bytesAt = (b: Uint8Array, offset: number, expected: readonly number[]) =>
  b.length >= offset + expected.length && expected.every((v, i) => b[offset + i] === v);

const asciiAt = (b: Uint8Array, offset: number, text: string) =>
  bytesAt(
    b,
    offset,
    Array.from(text, (c) => c.charCodeAt(0)),
  );

const riff =
  (form: string): Test =>
  (b) =>
    asciiAt(b, 0, 'RIFF') && asciiAt(b, 8, form);

/** One file format: how it starts, the types that claim it, and the type it is known by. */
interface Family {
  test: Test;
  mimes: readonly string[];
}

const FAMILIES: Record<string, Family> = {
  png: { test: (b) => bytesAt(b, 0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), mimes: ['image/png', 'image/apng'] },
  jpeg: { test: (b) => bytesAt(b, 0, [0xff, 0xd8, 0xff]), mimes: ['image/jpeg', 'image/jpg', 'image/pjpeg'] },
  gif: { test: (b) => asciiAt(b, 0, 'GIF87a') || asciiAt(b, 0, 'GIF89a'), mimes: ['image/gif'] },
  webp: { test: riff('WEBP'), mimes: ['image/webp'] },
  bmp: { test: (b) => asciiAt(b, 0, 'BM') && b.length >= 14, mimes: ['image/bmp', 'image/x-bmp', 'image/x-ms-bmp'] },
  tiff: { test: (b) => bytesAt(b, 0, [0x49, 0x49, 0x2a, 0x00]) || bytesAt(b, 0, [0x4d, 0x4d, 0x00, 0x2a]), mimes: ['image/tiff'] },
  ico: { test: (b) => bytesAt(b, 0, [0x00, 0x00, 0x01, 0x00]), mimes: ['image/x-icon', 'image/vnd.microsoft.icon'] },
  pdf: { test: (b) => asciiAt(b, 0, '%PDF-'), mimes: ['application/pdf'] },
  zip: {
    // Office Open XML, OpenDocument and EPUB files are zip archives.
    test: (b) =>
      bytesAt(b, 0, [0x50, 0x4b, 0x03, 0x04]) || bytesAt(b, 0, [0x50, 0x4b, 0x05, 0x06]) || bytesAt(b, 0, [0x50, 0x4b, 0x07, 0x08]),
    mimes: [
      'application/zip',
      'application/x-zip-compressed',
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
      'application/vnd.openxmlformats-officedocument.presentationml.presentation',
      'application/vnd.oasis.opendocument.text',
      'application/vnd.oasis.opendocument.spreadsheet',
      'application/vnd.oasis.opendocument.presentation',
      'application/epub+zip',
    ],
  },
  ole: {
    // Compound File Binary: the Office 97-2003 formats.
    test: (b) => bytesAt(b, 0, [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]),
    mimes: ['application/msword', 'application/vnd.ms-excel', 'application/vnd.ms-powerpoint', 'application/vnd.ms-outlook'],
  },
  isobmff: {
    // MP4, QuickTime, 3GP, M4A, HEIF and AVIF: a box of type `ftyp` first.
    test: (b) => asciiAt(b, 4, 'ftyp'),
    mimes: [
      'video/mp4',
      'audio/mp4',
      'video/quicktime',
      'video/3gpp',
      'video/3gpp2',
      'audio/3gpp',
      'audio/3gpp2',
      'audio/m4a',
      'audio/x-m4a',
      'video/x-m4v',
      'image/heic',
      'image/heif',
      'image/avif',
    ],
  },
  ebml: {
    test: (b) => bytesAt(b, 0, [0x1a, 0x45, 0xdf, 0xa3]),
    mimes: ['video/webm', 'audio/webm', 'video/x-matroska', 'audio/x-matroska'],
  },
  ogg: { test: (b) => asciiAt(b, 0, 'OggS'), mimes: ['audio/ogg', 'video/ogg', 'application/ogg', 'audio/opus'] },
  mp3: {
    // An ID3v2 tag, or an MPEG audio frame sync (11 set bits).
    test: (b) => asciiAt(b, 0, 'ID3') || (b.length >= 2 && b[0] === 0xff && (b[1] & 0xe0) === 0xe0),
    mimes: ['audio/mpeg', 'audio/mp3', 'audio/mpeg3', 'audio/x-mpeg-3', 'audio/x-mp3'],
  },
  aac: {
    // ADTS frames (sync 0xFFF, layer 0), possibly after an ID3 tag.
    test: (b) => asciiAt(b, 0, 'ID3') || (b.length >= 2 && b[0] === 0xff && (b[1] & 0xf6) === 0xf0),
    mimes: ['audio/aac', 'audio/x-aac', 'audio/aacp'],
  },
  wav: { test: riff('WAVE'), mimes: ['audio/wav', 'audio/x-wav', 'audio/wave', 'audio/vnd.wave'] },
  avi: { test: riff('AVI '), mimes: ['video/x-msvideo', 'video/avi', 'video/msvideo'] },
  flac: { test: (b) => asciiAt(b, 0, 'fLaC'), mimes: ['audio/flac', 'audio/x-flac'] },
  amr: { test: (b) => asciiAt(b, 0, '#!AMR'), mimes: ['audio/amr'] },
  gzip: { test: (b) => bytesAt(b, 0, [0x1f, 0x8b]), mimes: ['application/gzip', 'application/x-gzip'] },
  rar: { test: (b) => asciiAt(b, 0, 'Rar!\x1a\x07'), mimes: ['application/vnd.rar', 'application/x-rar-compressed', 'application/x-rar'] },
  sevenZip: { test: (b) => bytesAt(b, 0, [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c]), mimes: ['application/x-7z-compressed'] },
  rtf: { test: (b) => asciiAt(b, 0, '{\\rtf'), mimes: ['application/rtf', 'text/rtf'] },
};

const FAMILY_OF_MIME = new Map<string, Family>(
  Object.values(FAMILIES).flatMap((family) => family.mimes.map((mime) => [mime, family] as const)),
);

/**
 * Types refused whatever the bytes: a browser opening the file URL could run them (HTML, SVG,
 * script, MHTML) or they are programs. 415.
 */
const FORBIDDEN = new Set([
  'text/html',
  'application/xhtml+xml',
  'image/svg+xml',
  'application/xslt+xml',
  'text/xsl',
  'application/javascript',
  'application/x-javascript',
  'application/ecmascript',
  'text/javascript',
  'text/ecmascript',
  'text/jscript',
  'text/vbscript',
  'application/x-vbscript',
  'application/hta',
  'application/x-msdownload',
  'application/x-msdos-program',
  'application/x-ms-installer',
  'application/x-msi',
  'application/vnd.microsoft.portable-executable',
  'application/x-dosexec',
  'application/x-executable',
  'application/x-elf',
  'application/x-mach-binary',
  'application/x-sh',
  'application/x-csh',
  'application/x-shellscript',
  'text/x-shellscript',
  'application/x-bat',
  'application/x-httpd-php',
  'application/x-php',
  'text/x-php',
  'application/java-archive',
  'application/x-java-archive',
  'application/x-java-jnlp-file',
  'application/x-mimearchive',
  'message/rfc822',
]);

/** Refused prefixes: MHTML and other multipart documents render as pages in some browsers. */
const FORBIDDEN_PREFIXES = ['multipart/'];

/** Types that say nothing about the content: a client that sent no type gets `text/plain` from the parser. */
const GENERIC = new Set(['application/octet-stream', 'text/plain', 'binary/octet-stream', 'application/binary']);

/** `type/subtype` in RFC 6838 restricted-name characters. */
const MIME_SYNTAX = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/** The lower-cased essence of a Content-Type (`image/PNG; x=y` -> `image/png`); undefined when malformed. */
export function mimeEssence(contentType: string): string | undefined {
  const essence = contentType.split(';', 1)[0].trim().toLowerCase();
  return MIME_SYNTAX.test(essence) ? essence : undefined;
}

export function isForbiddenMime(mime: string): boolean {
  return FORBIDDEN.has(mime) || FORBIDDEN_PREFIXES.some((p) => mime.startsWith(p)) || /(^|[/+.-])(java|ecma)script$/.test(mime);
}

/** The type the leading bytes show, when they match a known format; never throws. */
export function detectMime(head: Uint8Array): string | undefined {
  if (FAMILIES.isobmff.test(head)) return isobmffMime(head);
  for (const family of Object.values(FAMILIES)) {
    if (family === FAMILIES.aac) continue; // its ID3 test would shadow mp3's
    if (family.test(head)) return family.mimes[0];
  }
  return undefined;
}

function isobmffMime(head: Uint8Array): string {
  const brand = String.fromCharCode(...head.subarray(8, 12));
  if (brand === 'qt  ') return 'video/quicktime';
  if (brand === 'avif' || brand === 'avis') return 'image/avif';
  if (['heic', 'heix', 'heim', 'heis', 'mif1', 'msf1'].includes(brand)) return 'image/heic';
  if (brand === 'M4A ' || brand === 'M4B ') return 'audio/mp4';
  if (brand.startsWith('3g2')) return 'video/3gpp2';
  if (brand.startsWith('3gp')) return 'video/3gpp';
  return 'video/mp4';
}

export type SniffVerdict =
  /** The type to store: the declared one, or what the bytes show when the declared one was generic. */
  { ok: true; mime: string } | { ok: false; reason: 'mismatch' };

/**
 * Checks a declared type (already an essence, not forbidden) against the leading bytes. A generic
 * declaration (`application/octet-stream`, or `text/plain`, which is what a part without a type
 * arrives as) is refined to the detected type when the bytes are a known format. Never throws.
 */
export function checkDeclaredMime(declared: string, head: Uint8Array): SniffVerdict {
  const family = FAMILY_OF_MIME.get(declared);
  if (family) return family.test(head) ? { ok: true, mime: declared } : { ok: false, reason: 'mismatch' };
  if (GENERIC.has(declared)) return { ok: true, mime: detectMime(head) ?? declared };
  return { ok: true, mime: declared };
}

/** A file name extension for a type, for files that came without a name. */
export function extensionOf(mime: string): string {
  const known: Record<string, string> = {
    'image/png': '.png',
    'image/jpeg': '.jpg',
    'image/gif': '.gif',
    'image/webp': '.webp',
    'application/pdf': '.pdf',
    'video/mp4': '.mp4',
    'audio/mpeg': '.mp3',
    'audio/ogg': '.ogg',
    'text/plain': '.txt',
  };
  return known[mime] ?? '';
}
