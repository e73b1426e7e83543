import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { importSPKI, jwtVerify } from 'jose';

/**
 * FCM HTTP v1 on loopback: Google's OAuth token endpoint for service accounts (RFC 7523 JWT bearer
 * grant: an RS256 assertion by the account's key, audience the token URI, the messaging scope) and
 * `POST /v1/projects/<project>/messages:send`, which requires a bearer it issued and checks the
 * message's shape as FCM does (a token, notification strings, data values all strings).
 */
export interface FakeFcm {
  base: string;
  /** The service-account JSON to configure (PARLEY_FCM_CREDENTIALS). */
  credentials: string;
  messages: Array<{ token: string; notification: { title: string; body: string }; data: Record<string, string> }>;
  tokensIssued: number;
  refused: string[];
  /** The clock assertions are judged by (Google uses its own; tests hand in the injected one). */
  now: () => number;
  /** The app was uninstalled: FCM answers 404 UNREGISTERED for this token. */
  unregister(token: string): void;
  close(): Promise<void>;
}

const SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';

export async function startFakeFcm(project = 'parley-test'): Promise<FakeFcm> {
  const { publicKey, privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const email = `push@${project}.iam.gserviceaccount.com`;
  const bearers = new Set<string>();
  const unregistered = new Set<string>();
  const fake = { messages: [], tokensIssued: 0, refused: [], now: () => Date.now() } as unknown as FakeFcm;
  let base = '';

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void handle(req, Buffer.concat(chunks).toString('utf8')).then(
        ([status, body]) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body)),
        (err: Error) => {
          fake.refused.push(err.message);
          res
            .writeHead(400, { 'content-type': 'application/json' })
            .end(JSON.stringify({ error: { code: 400, message: err.message, status: 'INVALID_ARGUMENT' } }));
        },
      );
    });
  });

  async function handle(req: http.IncomingMessage, text: string): Promise<[number, unknown]> {
    if (req.method === 'POST' && req.url === '/token') {
      const form = new URLSearchParams(text);
      if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') throw new Error('unsupported grant_type');
      const { payload } = await jwtVerify(
        form.get('assertion') ?? '',
        await importSPKI(publicKey.export({ type: 'spki', format: 'pem' }) as string, 'RS256'),
        {
          algorithms: ['RS256'],
          issuer: email,
          audience: `${base}/token`,
          currentDate: new Date(fake.now()),
        },
      );
      if (payload.scope !== SCOPE) throw new Error('scope must be firebase.messaging');
      const token = crypto.randomBytes(24).toString('base64url');
      bearers.add(token);
      fake.tokensIssued++;
      return [200, { access_token: token, expires_in: 3599, token_type: 'Bearer' }];
    }
    if (req.method === 'POST' && req.url === `/v1/projects/${project}/messages:send`) {
      const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (!bearer || !bearers.has(bearer)) return [401, { error: { code: 401, status: 'UNAUTHENTICATED' } }];
      const { message } = JSON.parse(text) as { message?: FakeFcm['messages'][number] };
      if (!message || typeof message.token !== 'string') throw new Error('message.token is required');
      if (typeof message.notification?.title !== 'string' || typeof message.notification.body !== 'string')
        throw new Error('notification.title and body must be strings');
      if (!message.data || Object.values(message.data).some((v) => typeof v !== 'string')) throw new Error('data values must be strings');
      if (unregistered.has(message.token)) {
        return [
          404,
          {
            error: {
              code: 404,
              status: 'NOT_FOUND',
              details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'UNREGISTERED' }],
            },
          },
        ];
      }
      fake.messages.push(message);
      return [200, { name: `projects/${project}/messages/${crypto.randomUUID()}` }];
    }
    return [404, { error: { code: 404 } }];
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(fake, {
    base,
    credentials: JSON.stringify({
      type: 'service_account',
      project_id: project,
      client_email: email,
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
      token_uri: `${base}/token`,
    }),
    unregister: (token: string) => void unregistered.add(token),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
