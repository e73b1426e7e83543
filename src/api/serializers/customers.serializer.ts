import type { CustomerView } from '../../domain/customers/customers.types.js';

/** The Customer (docs/api/resources.md): the same fields on every version (docs/api/versions.md lists no difference). */
export function serializeCustomer(customer: CustomerView): CustomerView {
  return {
    id: customer.id,
    login: customer.login,
    name: customer.name,
    avatar: customer.avatar,
    email: customer.email,
    phone: customer.phone,
    address: customer.address,
    profiles: customer.profiles.map((p) => ({ id: p.id, login: p.login, type: p.type, socialId: p.socialId, profileUrl: p.profileUrl })),
  };
}
