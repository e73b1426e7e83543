import type { Selectable } from 'kysely';
import type { PaymentTypesTable } from '../../db/schema.js';

export type PaymentTypeRow = Selectable<PaymentTypesTable>;
