import { useState, type FormEvent } from 'react';
import { api } from '../../api/client';
import type { Integration } from '../../api/types';
import { channelName } from '../../channels/ChannelName';
import { t } from '../../i18n';
import { ErrorLine, useAction } from './common';

/** Types whose provider lets a business write first, so Parley can send the owner a test (docs/api/integrations.md). */
const SENDS_TESTS: readonly string[] = ['msgra_business_api'];

/** A phone number in international format, as the server checks it. */
const PHONE = /^[1-9]\d{5,14}$/;

/**
 * "Send a test" where the provider allows writing first (a template to the owner's own phone);
 * elsewhere, how to test: write to the channel from one's own account.
 */
export function ChannelTest({ integration }: { integration: Integration }) {
  const name = channelName(integration.type);
  const [open, setOpen] = useState(false);
  const [phone, setPhone] = useState('');
  const [bad, setBad] = useState(false);
  const [sent, setSent] = useState<string | null>(null);
  const { run, error, busy } = useAction();
  if (!SENDS_TESTS.includes(integration.type)) {
    return <p className="small muted">{t('channels.test.writeFirst', { channel: name })}</p>;
  }
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const to = phone.trim();
    const wrong = !PHONE.test(to.replace(/[\s().-]/g, '').replace(/^\+/, ''));
    setBad(wrong);
    setSent(null);
    if (wrong) return;
    if (await run(() => api.post(`/integrations/${integration.id}/test`, { to }))) setSent(to);
  };
  if (!open) {
    return (
      <button type="button" className="small" onClick={() => setOpen(true)}>
        {t('channels.test.send')}
      </button>
    );
  }
  const fieldId = `test-phone-${integration.id}`;
  return (
    <form className="stack small" onSubmit={(e) => void submit(e)} noValidate data-send-test>
      <p className="muted">{t('channels.test.hint', { channel: name })}</p>
      <label className="stack" htmlFor={fieldId}>
        {t('channels.test.phone')}
      </label>
      <input
        id={fieldId}
        value={phone}
        inputMode="tel"
        autoComplete="tel"
        maxLength={32}
        aria-invalid={bad || undefined}
        aria-describedby={bad ? `${fieldId}-bad` : undefined}
        onChange={(e) => setPhone(e.target.value)}
      />
      {bad && (
        <span id={`${fieldId}-bad`} className="error small">
          {t('channels.test.badPhone')}
        </span>
      )}
      <ErrorLine error={error} />
      {sent && (
        <p className="ok" role="status">
          {t('channels.test.sent', { phone: sent, channel: name })}
        </p>
      )}
      <button type="submit" disabled={busy}>
        {t('channels.test.send')}
      </button>
    </form>
  );
}
