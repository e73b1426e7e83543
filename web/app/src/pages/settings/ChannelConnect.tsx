import { useEffect, useState, type FormEvent } from 'react';
import { api, ApiError } from '../../api/client';
import type { BridgeConnectInfo, Integration, WidgetInfo } from '../../api/types';
import { CHANNEL_HELP, fieldLabel, SECRET_FIELDS } from '../../channels/channel-help';
import { channelType, type ChannelTypeCode } from '../../channels/channel-types';
import { ChannelGlyph, channelName } from '../../channels/ChannelName';
import { ChannelHealth } from '../../channels/ChannelHealth';
import { t } from '../../i18n';
import { linkProps } from '../../router';
import { ChannelTest } from './ChannelTest';
import { CopyButton, ErrorLine } from './common';
import { HUMAN_AGENT_TYPES, MetaWebhook } from './MetaWebhook';
import { BridgeStart } from './PersonalAccounts';

/** What `GET /v1.3/integrations/types` tells of one type. */
export interface TypeInfo {
  type: string;
  fields: Array<{ name: string; pattern: string; format: string }>;
  mode: string;
  needsPublicUrl: boolean;
  available: boolean;
}
interface TypesAnswer {
  publicUrl: boolean;
  types: TypeInfo[];
}

/** The types' credential fields and delivery modes in this installation (read once per page). */
export function useIntegrationTypes(): TypesAnswer | null {
  const [types, setTypes] = useState<TypesAnswer | null>(null);
  useEffect(() => {
    void api
      .get<TypesAnswer>('/integrations/types')
      .then(setTypes)
      .catch(() => setTypes(null));
  }, []);
  return types;
}

/** The fields that do not match their format, checked before anything is sent. */
function badFields(fields: TypeInfo['fields'], values: Record<string, string>): string[] {
  return fields.filter((f) => !new RegExp(f.pattern).test((values[f.name] ?? '').trim())).map((f) => f.name);
}

function CredentialFields({
  type,
  fields,
  values,
  bad,
  onChange,
}: {
  type: string;
  fields: TypeInfo['fields'];
  values: Record<string, string>;
  bad: string[];
  onChange: (v: Record<string, string>) => void;
}) {
  return (
    <>
      {fields.map((f) => {
        const label = t(fieldLabel(type, f.name));
        const invalid = bad.includes(f.name);
        return (
          <label key={f.name} className="stack">
            {label}
            <input
              name={f.name}
              value={values[f.name] ?? ''}
              required
              maxLength={4096}
              autoComplete="off"
              type={SECRET_FIELDS.has(f.name) ? 'password' : 'text'}
              aria-invalid={invalid || undefined}
              aria-describedby={invalid ? `bad-${f.name}` : undefined}
              onChange={(e) => onChange({ ...values, [f.name]: e.target.value })}
            />
            {invalid && (
              <span id={`bad-${f.name}`} className="error small">
                {t('channels.form.badFormat', { field: label })}
              </span>
            )}
          </label>
        );
      })}
    </>
  );
}

const errorText = (err: unknown) => (err instanceof ApiError || err instanceof Error ? err.message : String(err));

/** The guided connection of one type: where each credential comes from, format checks, then what to do next. */
export function ConnectForm({
  type,
  info,
  publicUrl,
  onDone,
  onConnected,
}: {
  type: ChannelTypeCode;
  info: TypeInfo | undefined;
  publicUrl: boolean;
  onDone: () => void;
  onConnected: () => void;
}) {
  const row = channelType(type);
  const help = CHANNEL_HELP[row.help];
  const name = channelName(type);
  const fields = info?.fields ?? [];
  const [values, setValues] = useState<Record<string, string>>({});
  const [humanAgent, setHumanAgent] = useState(false);
  const [bad, setBad] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [made, setMade] = useState<Integration | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const wrong = badFields(fields, values);
    setBad(wrong);
    if (wrong.length) return;
    setBusy(true);
    setError(null);
    try {
      const credentials = Object.fromEntries(fields.map((f) => [f.name, (values[f.name] ?? '').trim()]));
      const settings = HUMAN_AGENT_TYPES.includes(type) ? { humanAgent } : undefined;
      const created = await api.post<Integration>('/integrations', { type, credentials, ...(settings ? { settings } : {}) });
      setMade(created);
      onConnected();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="card-form stack" aria-labelledby="connect-title" data-connect-form={type}>
      <h3 id="connect-title" className="row">
        <ChannelGlyph type={type} size={24} />
        {t('channels.form.title', { channel: name })}
      </h3>
      {info?.needsPublicUrl && !publicUrl && <p className="error">{t('channels.form.needsPublicUrl', { channel: name })}</p>}
      {info?.mode === 'polling' && <p className="muted">{t('channels.form.polling', { channel: name })}</p>}
      {row.kind === 'personal' && <p className="error">{t('channels.kind.personal')}</p>}
      <ol className="steps">
        {help.steps.map((step) => (
          <li key={step}>{t(step)}</li>
        ))}
      </ol>
      <p className="small">
        <a {...linkProps(`/help/channels/${row.help}`)}>{t('channels.form.helpLink')}</a>
      </p>
      {made ? (
        <Connected integration={made} />
      ) : (
        <form className="stack" onSubmit={(e) => void submit(e)} noValidate>
          <ErrorLine error={error} />
          <CredentialFields type={type} fields={fields} values={values} bad={bad} onChange={setValues} />
          {HUMAN_AGENT_TYPES.includes(type) && (
            <label className="row">
              <input type="checkbox" checked={humanAgent} onChange={(e) => setHumanAgent(e.target.checked)} />
              {t('wa.humanAgent')}
            </label>
          )}
          <div className="row">
            <button type="submit" className="primary" disabled={busy}>
              {busy ? t('channels.form.connecting', { channel: name }) : t('channels.connect')}
            </button>
            <button type="button" className="ghost" onClick={onDone}>
              {t('app.cancel')}
            </button>
          </div>
        </form>
      )}
      {made && (
        <button type="button" onClick={onDone}>
          {t('channels.help.back')}
        </button>
      )}
    </section>
  );
}

/** After connecting: the outcome, and what Parley registered or what the owner pastes on the provider's side. */
function Connected({ integration }: { integration: Integration & { bridge?: BridgeConnectInfo; widget?: WidgetInfo } }) {
  const name = channelName(integration.type);
  const help = CHANNEL_HELP[channelType(integration.type).help];
  const ok = integration.status !== 'auth failure';
  return (
    <div className="stack" data-connected={integration.id} role="status">
      <p className={ok ? '' : 'error'}>
        {ok ? t('channels.form.connected', { channel: name }) : t('channels.form.refused', { channel: name })}
      </p>
      <ChannelHealth integration={integration} />
      {ok && <p className="small">{t(help.after)}</p>}
      {integration.webhook && <MetaWebhook webhook={integration.webhook} />}
      {ok && channelType(integration.type).kind === 'official' && <ChannelTest integration={integration} />}
      {integration.widget && <WidgetSnippet info={integration.widget} />}
      {/* The bridge's login panel is on the channel's card in the list above. */}
      {integration.bridge && <BridgeStart info={integration.bridge} />}
    </div>
  );
}

/** "Update credentials" of a connected channel: the same integration, its leads kept. */
export function CredentialsForm({ integration, onSaved }: { integration: Integration; onSaved: () => void }) {
  const types = useIntegrationTypes();
  const fields = types?.types.find((x) => x.type === integration.type)?.fields ?? [];
  const [values, setValues] = useState<Record<string, string>>({});
  const [bad, setBad] = useState<string[]>([]);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const wrong = badFields(fields, values);
    setBad(wrong);
    if (wrong.length) return;
    try {
      const credentials = Object.fromEntries(fields.map((f) => [f.name, (values[f.name] ?? '').trim()]));
      await api.put(`/integrations/${integration.id}/credentials`, { credentials });
      onSaved();
    } catch (err) {
      setError(errorText(err));
    }
  };
  return (
    <form className="stack" onSubmit={(e) => void submit(e)} noValidate data-credentials-form>
      <ErrorLine error={error} />
      <CredentialFields type={integration.type} fields={fields} values={values} bad={bad} onChange={setValues} />
      <button type="submit">{t('channels.updateSave')}</button>
    </form>
  );
}

export function WidgetSnippet({ info }: { info: WidgetInfo }) {
  return (
    <div className="stack snippet">
      <p className="small">{t('integrations.snippet')}</p>
      <pre className="code" data-snippet>
        {info.snippet}
      </pre>
      <CopyButton text={info.snippet} />
    </div>
  );
}
