import { Type } from 'typebox';
import type { PaymentTypeRow } from '../../domain/payment-types/payment-types.types.js';

export const PaymentTypeObject = Type.Object(
  { id: Type.Integer(), title: Type.String() },
  { title: 'PaymentType', description: 'Payment type' },
);

export function serializePaymentType(row: PaymentTypeRow) {
  return { id: row.id, title: row.title };
}
