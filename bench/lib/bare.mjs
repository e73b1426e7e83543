// The ceiling: a bare fastify route answering a given JSON body, serialized per request as any route
// must. The suite registers each scenario's sample answer (PUT /__body/<name>) and then loads
// /bare/<name> with the scenario's own requests (same method, headers and request body).
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { root } from '../../scripts/ensure-built.mjs';

const { default: Fastify } = await import(pathToFileURL(createRequire(path.join(root, 'package.json')).resolve('fastify')).href);
const bodies = new Map();
const app = Fastify({ logger: false, bodyLimit: 16 * 1024 * 1024 });
app.put('/__body/:name', async (req) => {
  bodies.set(req.params.name, req.body);
  return { ok: true };
});
app.route({ method: ['GET', 'POST'], url: '/bare/:name', handler: async (req) => bodies.get(req.params.name) ?? null });
const address = await app.listen({ port: Number(process.env.HELPER_PORT ?? 0), host: '127.0.0.1' });
process.stdout.write(`serving ${address}\n`);
