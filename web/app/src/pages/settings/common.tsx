import { useCallback, useEffect, useState } from 'react';
import { t } from '../../i18n';
import { errorText } from '../../i18n/errors';

/** Loads a resource, with reload; errors end up in `error`. */
export function useResource<T>(load: () => Promise<T>) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: callers pass a new inline loader each render; the first one is the resource's
  const reload = useCallback(async () => {
    try {
      setData(await load());
      setError(null);
    } catch (e) {
      setError(errorText(e));
    }
  }, []);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { data, error, reload, setData, setError };
}

/** Runs an action, reporting its error; answers whether it worked. */
export function useAction() {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async (fn: () => Promise<unknown>): Promise<boolean> => {
    setBusy(true);
    setError(null);
    try {
      await fn();
      return true;
    } catch (e) {
      setError(errorText(e));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { run, error, busy };
}

export function ErrorLine({ error }: { error: string | null }) {
  return error ? (
    <p className="error" role="alert">
      {error}
    </p>
  ) : null;
}

/** Field errors of a 400, shown at the part they name. */
export function FieldErrors({ id, messages }: { id?: string; messages: string[] }) {
  if (messages.length === 0) return null;
  return (
    <p className="error small" id={id} role="alert">
      {messages.map((m) => t('automation.invalid', { reason: m })).join(' ')}
    </p>
  );
}

export function CopyButton({ text }: { text: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      className="small"
      onClick={() => {
        void navigator.clipboard?.writeText(text).then(
          () => setDone(true),
          () => setDone(false),
        );
      }}
    >
      {done ? t('app.copied') : t('app.copy')}
    </button>
  );
}

export function confirmDelete(name: string): boolean {
  return window.confirm(t('app.confirmDelete', { name }));
}

/**
 * A one-field "add" form: submits the trimmed value through `run` (so failures show in the
 * section's error line), clears the field when the server accepted it, then refreshes.
 */
export function AddOneForm(props: {
  label: string;
  button: string;
  maxLength: number;
  run: (fn: () => Promise<unknown>) => Promise<boolean>;
  add: (value: string) => Promise<unknown>;
  refresh: () => void;
}) {
  const [value, setValue] = useState('');
  return (
    <form
      className="row"
      onSubmit={(e) => {
        e.preventDefault();
        void props
          .run(() => props.add(value.trim()))
          .then((ok) => {
            if (ok) setValue('');
            props.refresh();
          });
      }}
    >
      <input
        placeholder={props.label}
        aria-label={props.label}
        value={value}
        required
        maxLength={props.maxLength}
        onChange={(e) => setValue(e.target.value)}
      />
      <button type="submit" className="primary">
        {props.button}
      </button>
    </form>
  );
}

/** A secret the server shows only once (API key, plugin token), with a copy button. */
export function ShownOnce({ message, secret }: { message: string; secret: string }) {
  return (
    <div className="card-form stack" role="status">
      <p>{message}</p>
      <pre className="code">{secret}</pre>
      <CopyButton text={secret} />
    </div>
  );
}
