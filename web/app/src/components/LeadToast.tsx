import { t } from '../i18n';
import { navigate } from '../router';
import '../sales.css';

/** One message about a lead among the app's toasts: what happened, a line of detail, "Open" (the lead) and "Dismiss". */
export function LeadToast({
  leadId,
  title,
  line,
  onDismiss,
  data,
}: {
  leadId: number;
  title: string;
  line: string;
  onDismiss: () => void;
  /** `data-*` attributes that name the toast (tests and styles find it by them). */
  data: Record<`data-${string}`, string | number>;
}) {
  return (
    <div className="toast" {...data}>
      <p>
        <strong>{title}</strong>
      </p>
      <p className="small">{line}</p>
      <div className="row">
        <button
          type="button"
          className="small primary"
          onClick={() => {
            onDismiss();
            navigate(`/leads/${leadId}`);
          }}
        >
          {t('notes.open')}
        </button>
        <button type="button" className="small ghost" onClick={onDismiss}>
          {t('notes.dismiss')}
        </button>
      </div>
    </div>
  );
}
