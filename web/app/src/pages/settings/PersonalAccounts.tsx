import { useEffect, useRef, useState } from 'react';
import { encode } from 'uqr';
import { api } from '../../api/client';
import type { BridgeConnectInfo, BridgeState } from '../../api/types';
import { t } from '../../i18n';
import { CopyButton, ErrorLine, ShownOnce, useAction } from './common';

/** Personal accounts: served by an account bridge (docs/channels/bridge.md). */
export const PERSONAL_TYPES = ['msgrb_personal', 'msgra', 'msgra2', 'social2_personal', 'photonetV2'];
export const isPersonal = (type: string) => PERSONAL_TYPES.includes(type);

/** How often the login state is read while a personal account is connecting. */
const POLL_MS = 2000;

/** The token, once, and how to start the bridge. */
export function BridgeStart({ info }: { info: BridgeConnectInfo }) {
  return (
    <div className="stack" data-bridge-start>
      <ShownOnce message={t('bridge.tokenOnce')} secret={info.token} />
      {info.command ? (
        <>
          {info.command.includes(' bridge whatsapp ') && <p className="error small">{t('bridge.whatsappRisk')}</p>}
          <p>{t('bridge.command')}</p>
          <pre className="code">{info.command}</pre>
          <CopyButton text={info.command} />
        </>
      ) : (
        <p className="muted">{t('bridge.ownBridge', { url: info.url })}</p>
      )}
    </div>
  );
}

/**
 * The bridge's state and login prompt, live: a QR code to scan, or a phone, code or password to type.
 * `onStatus` is told when the polled status differs from the `status` the list shows, so the list
 * turns `active` as the login completes without a reload.
 */
export function BridgeLogin({
  integrationId,
  isOwner,
  status,
  onStatus,
}: {
  integrationId: number;
  isOwner: boolean;
  status: string;
  onStatus: () => void;
}) {
  const [state, setState] = useState<BridgeState | null>(null);
  const [value, setValue] = useState('');
  const [rotated, setRotated] = useState<BridgeConnectInfo | null>(null);
  const { run, error, busy } = useAction();
  useEffect(() => {
    let alive = true;
    const load = () =>
      api.get<BridgeState>(`/integrations/${integrationId}/bridge`).then(
        (s) => alive && setState(s),
        () => undefined,
      );
    void load();
    const timer = setInterval(() => void load(), POLL_MS);
    return () => {
      alive = false;
      clearInterval(timer);
    };
  }, [integrationId]);
  const told = useRef(onStatus);
  told.current = onStatus;
  const polled = state?.status;
  useEffect(() => {
    if (polled && polled !== status) told.current();
  }, [polled, status]);
  if (!state) return null;
  const prompt = state.prompt;
  return (
    <div className="stack" data-bridge-login={integrationId}>
      <p className="muted small">{state.online ? t('bridge.online') : t('bridge.offline')}</p>
      <ErrorLine error={error} />
      {prompt?.kind === 'qr' && prompt.data && (
        <div className="stack">
          <p>{prompt.expired ? t('bridge.qrExpired') : t('bridge.qrScan')}</p>
          {!prompt.expired && <QrCode data={prompt.data} />}
        </div>
      )}
      {prompt && prompt.kind !== 'qr' && isOwner && (
        <form
          className="row wrap"
          onSubmit={(e) => {
            e.preventDefault();
            void run(() => api.post(`/integrations/${integrationId}/bridge/login`, { kind: prompt.kind, value })).then(
              (ok) => ok && setValue(''),
            );
          }}
        >
          <label className="grow">
            {t(`bridge.prompt.${prompt.kind}` as 'bridge.prompt.code')}
            {prompt.hint && <span className="muted small"> ({prompt.hint})</span>}
            <input
              type={prompt.kind === 'password' ? 'password' : 'text'}
              value={value}
              required
              maxLength={500}
              onChange={(e) => setValue(e.target.value)}
            />
          </label>
          <button type="submit" disabled={busy}>
            {t('bridge.send')}
          </button>
          {prompt.error && <span className="error small">{prompt.error}</span>}
        </form>
      )}
      {isOwner && (
        <button
          type="button"
          className="ghost small"
          onClick={() =>
            void run(async () => setRotated(await api.post<BridgeConnectInfo>(`/integrations/${integrationId}/bridge/token`, {})))
          }
        >
          {t('bridge.rotate')}
        </button>
      )}
      {rotated && <BridgeStart info={rotated} />}
    </div>
  );
}

/** A QR code drawn from the bridge's text (uqr encodes; no image leaves the browser). */
export function QrCode({ data }: { data: string }) {
  const { size, data: modules } = encode(data, { border: 2 });
  const cells: string[] = [];
  modules.forEach((row, y) => {
    row.forEach((on, x) => {
      if (on) cells.push(`M${x} ${y}h1v1h-1z`);
    });
  });
  return (
    <svg
      className="qr"
      role="img"
      aria-label={t('bridge.qrScan')}
      viewBox={`0 0 ${size} ${size}`}
      width={Math.max(200, size * 6)}
      height={Math.max(200, size * 6)}
      shapeRendering="crispEdges"
    >
      <rect width={size} height={size} fill="#fff" />
      <path d={cells.join('')} fill="#000" />
    </svg>
  );
}
