import { t } from '../i18n';
import '../sales.css';

/** A change the server refused, told at the top of the page (announced at once) until dismissed. */
export function ErrorToast({
  text,
  onDismiss,
  data = {},
}: {
  text: string;
  onDismiss: () => void;
  data?: Record<`data-${string}`, string>;
}) {
  return (
    <div className="toasts toasts-top" role="alert">
      <div className="toast toast-error" {...data}>
        <p>{text}</p>
        <button type="button" className="small ghost" onClick={onDismiss}>
          {t('notes.dismiss')}
        </button>
      </div>
    </div>
  );
}
