import { useEffect, useRef, useState } from 'react';
import { api } from '../../api/client';
import type { Integration, WidgetInfo } from '../../api/types';
import { useCatalog } from '../../catalog';
import { CHANNEL_TYPES, GALLERY_TYPES, channelType, type ChannelGroup, type ChannelTypeCode } from '../../channels/channel-types';
import { ChannelGlyph, channelName } from '../../channels/ChannelName';
import { ChannelHealth } from '../../channels/ChannelHealth';
import { t } from '../../i18n';
import type { MessageKey } from '../../i18n/en';
import { useLocation } from '../../router';
import { ConnectForm, CredentialsForm, useIntegrationTypes, WidgetSnippet } from './ChannelConnect';
import { ChannelTest } from './ChannelTest';
import { WidgetSettingsForm } from './WidgetSettings';
import { confirmDelete, ErrorLine, useAction } from './common';
import { MetaWebhook } from './MetaWebhook';
import { BridgeLogin, isPersonal } from './PersonalAccounts';

const GROUPS: Array<[ChannelGroup, MessageKey]> = [
  ['messengers', 'channels.group.messengers'],
  ['social', 'channels.group.social'],
  ['site', 'channels.group.site'],
];

const KIND_TEXT: Record<string, MessageKey> = {
  official: 'channels.kind.official',
  personal: 'channels.kind.personal',
  own: 'channels.kind.own',
};

const STATUS_TEXT: Record<string, MessageKey> = {
  active: 'channels.status.active',
  'auth failure': 'channels.status.authFailure',
  connecting: 'channels.status.connecting',
};

/** Settings, Channels: the connected channels with their health, then the gallery of the ones to add. */
export function ChannelSettings() {
  const { integrations, reload } = useCatalog();
  const [connecting, setConnecting] = useState<ChannelTypeCode | null>(null);
  const types = useIntegrationTypes();
  // `?channel=<id>` (the conversation's link to a channel in trouble): that card is brought into view.
  const wanted = Number(useLocation().query.get('channel')) || null;
  const refresh = () => void reload(['integrations']);
  // Health changes with every message: read it fresh whenever the section opens.
  // biome-ignore lint/correctness/useExhaustiveDependencies: once per opening
  useEffect(refresh, []);
  return (
    <div className="stack">
      <section aria-labelledby="channels-connected" className="stack">
        <h3 id="channels-connected">{t('channels.connected')}</h3>
        {integrations.length === 0 && <p className="muted">{t('channels.none')}</p>}
        <ul className="plain stack">
          {integrations.map((i) => (
            <ConnectedChannel key={i.id} integration={i} onChange={refresh} wanted={i.id === wanted} />
          ))}
        </ul>
      </section>
      {connecting ? (
        <ConnectForm
          type={connecting}
          info={types?.types.find((x) => x.type === connecting)}
          publicUrl={types?.publicUrl ?? true}
          onDone={() => {
            setConnecting(null);
            refresh();
          }}
          onConnected={refresh}
        />
      ) : (
        <section aria-labelledby="channels-gallery" className="stack">
          <h3 id="channels-gallery">{t('channels.gallery.title')}</h3>
          {GROUPS.map(([group, title]) => (
            <section key={group} aria-label={t(title)} className="stack">
              <h4>{t(title)}</h4>
              <ul className="plain channel-gallery">
                {GALLERY_TYPES.filter((type) => CHANNEL_TYPES[type].group === group).map((type) => (
                  <li key={type} className="card-form channel-card" data-channel-card={type}>
                    <div className="row">
                      <ChannelGlyph type={type} size={28} />
                      <strong>{channelName(type)}</strong>
                    </div>
                    <p className="small">{t(CHANNEL_TYPES[type].description)}</p>
                    <p className={`small ${CHANNEL_TYPES[type].kind === 'personal' ? 'error' : 'muted'}`}>
                      {t(KIND_TEXT[CHANNEL_TYPES[type].kind])}
                    </p>
                    <button
                      type="button"
                      className="primary small"
                      aria-label={`${t('channels.connect')}: ${channelName(type)}`}
                      onClick={() => setConnecting(type)}
                    >
                      {t('channels.connect')}
                    </button>
                  </li>
                ))}
              </ul>
            </section>
          ))}
        </section>
      )}
    </div>
  );
}

/** One connected channel: name, account, status and health, and what the owner can do with it. */
function ConnectedChannel({ integration: i, onChange, wanted }: { integration: Integration; onChange: () => void; wanted: boolean }) {
  const { isOwner } = useCatalog();
  const card = useRef<HTMLLIElement>(null);
  useEffect(() => {
    if (!wanted) return;
    card.current?.scrollIntoView({ block: 'center' });
    card.current?.focus();
  }, [wanted]);
  const [snippet, setSnippet] = useState<WidgetInfo | null>(null);
  const [widget, setWidget] = useState<WidgetInfo | null>(null);
  const [updating, setUpdating] = useState(false);
  const { run, error } = useAction();
  const kind = channelType(i.type).kind;
  return (
    <li ref={card} className={`card-form stack${wanted ? ' wanted' : ''}`} data-integration={i.id} tabIndex={wanted ? -1 : undefined}>
      <ErrorLine error={error} />
      <div className="row wrap">
        <ChannelGlyph type={i.type} size={20} />
        <strong>{channelName(i.type)}</strong>
        <span>{i.login || `#${i.id}`}</span>
        <span className={`tag ${i.status === 'active' ? 'ok' : 'danger'}`} data-status={i.status}>
          {STATUS_TEXT[i.status] ? t(STATUS_TEXT[i.status]) : i.status}
        </span>
      </div>
      <ChannelHealth integration={i} />
      {isOwner && (
        <div className="row wrap">
          {i.type === 'widget' && !snippet && (
            <button
              type="button"
              className="small"
              onClick={() => void run(async () => setSnippet(await api.get<WidgetInfo>(`/integrations/${i.id}/widget`)))}
            >
              {t('integrations.showSnippet')}
            </button>
          )}
          {i.type === 'widget' && (
            <button
              type="button"
              className="small"
              aria-expanded={widget !== null}
              onClick={() =>
                widget ? setWidget(null) : void run(async () => setWidget(await api.get<WidgetInfo>(`/integrations/${i.id}/widget`)))
              }
            >
              {t('widgetSettings.open')}
            </button>
          )}
          {kind === 'official' && (
            <>
              <button type="button" className="small" onClick={() => setUpdating(!updating)} aria-expanded={updating}>
                {t('channels.update')}
              </button>
              <button
                type="button"
                className="small"
                onClick={() => void run(() => api.post(`/integrations/${i.id}/reconnect`)).then(onChange)}
              >
                {t('channels.reconnect')}
              </button>
            </>
          )}
          <button
            type="button"
            className="ghost small danger"
            onClick={() => confirmDelete(i.login || channelName(i.type)) && void run(() => api.del(`/integrations/${i.id}`)).then(onChange)}
          >
            {t('channels.disconnect')}
          </button>
        </div>
      )}
      {updating && (
        <CredentialsForm
          integration={i}
          onSaved={() => {
            setUpdating(false);
            onChange();
          }}
        />
      )}
      {isOwner && kind === 'official' && i.status === 'active' && <ChannelTest integration={i} />}
      {snippet && <WidgetSnippet info={snippet} />}
      {widget && <WidgetSettingsForm info={widget} onSaved={setWidget} />}
      {i.webhook && <MetaWebhook webhook={i.webhook} />}
      {isPersonal(i.type) && <BridgeLogin integrationId={i.id} isOwner={isOwner} status={i.status} onStatus={onChange} />}
    </li>
  );
}
