import webpush from 'web-push';
import { describe, expect, it } from 'vitest';
import { generateVapidKeys } from '../src/push/vapid.js';

describe('VAPID keys made without web-push', () => {
  it('are a P-256 pair in the form web-push signs with', () => {
    for (let i = 0; i < 20; i++) {
      const keys = generateVapidKeys();
      expect(Buffer.from(keys.publicKey, 'base64url')).toHaveLength(65);
      expect(Buffer.from(keys.privateKey, 'base64url')).toHaveLength(32);
      // web-push validates both keys' lengths and signs a VAPID JWT with them.
      const headers = webpush.getVapidHeaders(
        'https://push.example.com',
        'mailto:ops@example.com',
        keys.publicKey,
        keys.privateKey,
        'aes128gcm',
      );
      expect(String(headers.Authorization)).toMatch(/^vapid t=.+, k=/);
    }
  });
});
