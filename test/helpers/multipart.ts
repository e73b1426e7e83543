import fs from 'node:fs';
import path from 'node:path';
import type { Harness } from './harness.js';

/** One form entry: a text field, or a file part (Blob) with its type and name. */
export type FormEntry =
  | [name: string, value: string]
  | [name: string, file: { data: Uint8Array | string; type?: string; filename?: string }];

/** A multipart/form-data body built by the platform's FormData, as a real client would send it. */
export async function multipartBody(entries: FormEntry[]): Promise<{ body: Buffer; contentType: string }> {
  const form = new FormData();
  for (const [name, value] of entries) {
    if (typeof value === 'string') form.append(name, value);
    else form.append(name, new Blob([value.data], { type: value.type ?? '' }), value.filename ?? 'file.bin');
  }
  const res = new Response(form);
  return { body: Buffer.from(await res.arrayBuffer()), contentType: res.headers.get('content-type')! };
}

export async function postForm(h: Harness, url: string, token: string | undefined, entries: FormEntry[]) {
  const { body, contentType } = await multipartBody(entries);
  return h.request({ method: 'POST', url, token, headers: { 'content-type': contentType }, body });
}

/** Every regular file under the harness's file storage folder (temporary ones included). */
export function storedBlobs(h: Harness): string[] {
  const root = path.join(h.dataDir, 'files');
  if (!fs.existsSync(root)) return [];
  return (fs.readdirSync(root, { recursive: true }) as string[]).map((p) => path.join(root, p)).filter((p) => fs.statSync(p).isFile());
}

export async function fileRows(h: Harness, accountId?: number) {
  let q = h.database.db.kysely.selectFrom('files').selectAll();
  if (accountId !== undefined) q = q.where('account_id', '=', accountId);
  return q.execute();
}

const png = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
/** Bytes that start like the named format, padded to `size`. */
export function sample(kind: 'png' | 'jpeg' | 'pdf' | 'text', size = 200): Uint8Array {
  const out = new Uint8Array(size);
  const head =
    kind === 'png'
      ? png
      : kind === 'jpeg'
        ? [0xff, 0xd8, 0xff, 0xe0]
        : Array.from(kind === 'pdf' ? '%PDF-1.7\n' : 'hello, plain text\n', (c) => c.charCodeAt(0));
  out.set(head.slice(0, size));
  for (let i = head.length; i < size; i++) out[i] = kind === 'text' ? 0x61 + (i % 26) : (i * 31) & 0xff;
  return out;
}
