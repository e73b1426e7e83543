import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

const here = path.dirname(fileURLToPath(import.meta.url));

// The agent app: built into dist/web/app and served by Parley at / (src/api/routes/app.routes.ts).
export default defineConfig({
  root: here,
  base: '/',
  plugins: [react()],
  build: {
    outDir: path.resolve(here, '../../dist/web/app'),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: true,
  },
  server: {
    // `npx vite --config web/app/vite.config.ts` during development: the API from a running Parley.
    proxy: {
      '/v1.3': { target: 'http://127.0.0.1:8080', ws: true },
      '/files': 'http://127.0.0.1:8080',
      '/widget.js': 'http://127.0.0.1:8080',
    },
  },
});
