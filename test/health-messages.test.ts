import { describe, expect, it } from 'vitest';
import { ChannelCredentialsError, ChannelRejectedError, ChannelTimeoutError } from '../src/domain/channels/channel.js';
import { healthOf, quoteProvider } from '../src/domain/channels/health-messages.js';

/** The owner's sentences of integration health (docs/api/integrations.md "Health"). */
describe('health messages', () => {
  it('quote a provider on one line, without control characters, cut at 300 characters', () => {
    expect(quoteProvider('Bad\u0000 Request:\n\t<b>chat</b>  not found')).toBe('Bad Request: <b>chat</b> not found');
    const long = quoteProvider(`${'x'.repeat(1000)}`);
    expect(long).toHaveLength(300);
    expect(long.endsWith('…')).toBe(true);
  });

  it('name the network, the cause and the fix, whatever the provider sent', () => {
    const refused = healthOf(
      'msgra_business_api',
      new ChannelCredentialsError('Meta refused', `error 190: ${'<script>'.repeat(100)}`),
      'send',
      15_000,
    );
    expect(refused.code).toBe('credentials_refused');
    expect(refused.message).toMatch(
      /^WhatsApp refused the access token \(error 190: <script>.*…\): make a new permanent system-user token/,
    );
    expect(refused.message.length).toBeLessThan(500);
    expect(healthOf('social3', new ChannelTimeoutError('x'), 'connect', 15_000)).toEqual({
      code: 'provider_timeout',
      message: 'OK did not answer in 15 s: try again later.',
    });
    expect(healthOf('msgrc_bot', new ChannelRejectedError('chat not found'), 'send', 15_000).code).toBe('send_refused');
    expect(healthOf('msgrc_bot', new ChannelRejectedError('invalid token'), 'connect', 15_000).code).toBe('credentials_refused');
  });
});
