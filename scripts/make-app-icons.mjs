// Writes the agent app's PNG icons (web/app/public/icons): a blue rounded square with a white speech
// bubble, the same drawing as the SVG icon. Run once when the drawing changes; the PNGs are committed.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';

const out = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'web', 'app', 'public', 'icons');

function crc32(buf) {
  let c = ~0;
  for (const b of buf) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

/** Inside the 32-unit drawing: the bubble `M8 10h16v10H14l-6 5z` on a square with corner radius 8 (maskable: padded). */
function pixel(x, y, padded) {
  const s = padded ? (u) => (u - 0.1) / 0.8 : (u) => u;
  const u = s(x) * 32;
  const v = s(y) * 32;
  const inBubble = (u >= 8 && u <= 24 && v >= 10 && v <= 20) || (u >= 8 && u <= 14 && v >= 20 && v <= 25 && v - 20 <= ((14 - u) * 5) / 6);
  return inBubble ? [255, 255, 255] : [37, 99, 235];
}

function png(size, padded) {
  const rows = [];
  for (let y = 0; y < size; y++) {
    const row = Buffer.alloc(1 + size * 3);
    for (let x = 0; x < size; x++) row.set(pixel((x + 0.5) / size, (y + 0.5) / size, padded), 1 + x * 3);
    rows.push(row);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(Buffer.concat(rows), { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, 'icon-192.png'), png(192, false));
fs.writeFileSync(path.join(out, 'icon-512.png'), png(512, false));
fs.writeFileSync(path.join(out, 'maskable-512.png'), png(512, true));
