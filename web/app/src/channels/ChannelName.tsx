import { t } from '../i18n';
import { channelType } from './channel-types';

/** A type's name as text (CSV, notifications, options): never the API code. */
export function channelName(type: string): string {
  return t(channelType(type).name);
}

/** A network's glyph, decorative beside its name. */
export function ChannelGlyph({ type, size = 16 }: { type: string; size?: number }) {
  const { glyph } = channelType(type);
  return (
    <svg className="channel-glyph" width={size} height={size} viewBox="0 0 24 24" aria-hidden="true" focusable="false">
      <path d={glyph.path} fill={`#${glyph.hex}`} />
    </svg>
  );
}

/** Glyph and name of a channel type, as badges, headers and rows show it. */
export function ChannelName({ type }: { type: string }) {
  return (
    <span className="channel-name">
      <ChannelGlyph type={type} />
      {channelName(type)}
    </span>
  );
}
