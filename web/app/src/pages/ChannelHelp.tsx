import { CHANNEL_HELP } from '../channels/channel-help';
import { t } from '../i18n';
import { linkProps } from '../router';
import { CHANNEL_HELP_PAGES, type ChannelHelpPage } from '../routes';

const isHelpPage = (page: string): page is ChannelHelpPage => (CHANNEL_HELP_PAGES as readonly string[]).includes(page);

/** /help/channels/<page>: where a channel's credentials come from, and what happens after connecting. */
export default function ChannelHelpView({ page }: { page: string }) {
  const back = (
    <a {...linkProps('/settings/integrations')} className="small">
      {t('channels.help.back')}
    </a>
  );
  if (!isHelpPage(page)) {
    return (
      <div className="stack help-page">
        <p>{t('channels.help.unknown')}</p>
        {back}
      </div>
    );
  }
  const help = CHANNEL_HELP[page];
  return (
    <article className="stack help-page" data-help-page={page}>
      {back}
      <h2>{t(help.title)}</h2>
      <h3>{t('channels.help.where')}</h3>
      <ol className="steps">
        {help.steps.map((step) => (
          <li key={step}>{t(step)}</li>
        ))}
      </ol>
      <h3>{t('channels.help.afterTitle')}</h3>
      <p>{t(help.after)}</p>
    </article>
  );
}
