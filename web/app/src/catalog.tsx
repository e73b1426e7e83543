import { createContext, useCallback, useContext, useEffect, useState, type ReactNode } from 'react';
import { api } from './api/client';
import { realtime } from './api/realtime';
import type { Employee, Integration, Me, PaymentType, Status, Tariff, TemplateGroup } from './api/types';
import { forgetPick, isLocale, pendingPick, setCurrency, setLocale } from './i18n';
import { errorText } from './i18n/errors';

/** Account-wide reference data every screen uses, loaded once after sign-in. */
export interface Catalog {
  me: Me;
  statuses: Status[];
  employees: Employee[];
  integrations: Integration[];
  templates: TemplateGroup[];
  paymentTypes: PaymentType[];
  isOwner: boolean;
  userId: number | null;
  reload: (what?: Array<'statuses' | 'employees' | 'integrations' | 'templates' | 'paymentTypes'>) => Promise<void>;
}

const Ctx = createContext<Catalog | null>(null);

export function useCatalog(): Catalog {
  const c = useContext(Ctx);
  if (!c) throw new Error('no catalog');
  return c;
}

type Data = Omit<Catalog, 'reload' | 'isOwner' | 'userId'>;

const loaders = {
  statuses: () => api.get<Status[]>('/statuses'),
  employees: () => api.get<Employee[]>('/managers'),
  integrations: () => api.get<Integration[]>('/integrations'),
  templates: () => api.get<TemplateGroup[]>('/templates'),
  paymentTypes: () => api.get<PaymentType[]>('/payment-types'),
};

export function CatalogProvider({
  children,
  fallback,
}: {
  children: ReactNode;
  fallback: (error: string | null, retry: () => void) => ReactNode;
}) {
  const [data, setData] = useState<Data | null>(null);
  const [error, setError] = useState<string | null>(null);

  const loadAll = useCallback(async () => {
    setError(null);
    try {
      const [me, statuses, employees, integrations, templates, paymentTypes] = await Promise.all([
        api.get<Me>('/account/me'),
        loaders.statuses(),
        loaders.employees(),
        loaders.integrations(),
        loaders.templates(),
        loaders.paymentTypes(),
      ]);
      // A language picked on the sign-in screen becomes the employee's own; else the stored one wins
      // over the browser's. Amounts use the account's currency.
      const picked = pendingPick();
      if (picked && me.user) {
        setLocale(picked);
        if (picked === me.user.locale) forgetPick();
        else
          void api.put(`/managers/${me.user.id}`, { locale: picked }).then(
            () => forgetPick(),
            () => undefined, // kept in this browser: tried again at the next sign-in
          );
      } else if (isLocale(me.user?.locale)) setLocale(me.user.locale);
      void api.get<Tariff>('/account/me/tariff').then(
        (tariff) => setCurrency(tariff.currency),
        () => undefined,
      );
      setData({ me, statuses, employees, integrations, templates, paymentTypes });
    } catch (e) {
      setError(errorText(e));
    }
  }, []);

  useEffect(() => {
    void loadAll();
  }, [loadAll]);

  const reload = useCallback(async (what?: Array<keyof typeof loaders>) => {
    const keys = what ?? (Object.keys(loaders) as Array<keyof typeof loaders>);
    const values = await Promise.all(keys.map((k) => loaders[k]()));
    setData((d) => {
      if (!d) return d;
      const next = { ...d } as Record<string, unknown>;
      keys.forEach((k, i) => {
        next[k] = values[i];
      });
      return next as unknown as Data;
    });
  }, []);

  // An integration connected, removed, or whose status or health changed (docs/api/webhooks.md
  // "The realtime stream"): the cards and the open conversation show it without a reload.
  useEffect(
    () =>
      realtime.subscribe((m) => {
        if (m.kind === 'event' && m.event.type.startsWith('integration.')) void reload(['integrations']).catch(() => undefined);
      }),
    [reload],
  );

  if (!data) return <>{fallback(error, loadAll)}</>;
  const value: Catalog = {
    ...data,
    isOwner: data.me.user?.role === 'owner',
    userId: data.me.user?.id ?? null,
    reload,
  };
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>;
}

export function statusName(statuses: Status[], id: number | null): string | undefined {
  return statuses.find((s) => s.id === id)?.name;
}

export function employeeName(employees: Employee[], id: number | null): string | undefined {
  const e = employees.find((x) => x.id === id);
  return e ? e.name || e.login : undefined;
}
