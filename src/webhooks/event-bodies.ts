import { eventBodyFor } from '../events/event-versions.js';
import { withHostedTypeNames } from '../domain/accounts/type-names.js';

/** Bodies kept: the events of a few claims (each event's deliveries are claimed close together). */
const BODIES_KEPT = 2048;

/**
 * An event's webhook body by API version and the account's `typeNames` setting
 * (docs/api/integrations.md), serialized once for all the endpoints that receive it: a stored event
 * never changes, and each of its deliveries only signs the same bytes with its own secret.
 */
export class EventBodies {
  private readonly bodies = new Map<string, Buffer>();

  of(eventId: number, apiVersion: string, typeNames: string | null, payload: string): Buffer {
    const key = `${eventId} ${apiVersion} ${typeNames ?? ''}`;
    let body = this.bodies.get(key);
    if (!body) {
      const versioned = eventBodyFor(apiVersion, payload);
      body = Buffer.from(typeNames === 'hosted' ? withHostedTypeNames(versioned) : versioned);
      // Oldest out first: deliveries of one event are claimed close together.
      if (this.bodies.size >= BODIES_KEPT) this.bodies.delete(this.bodies.keys().next().value as string);
      this.bodies.set(key, body);
    }
    return body;
  }
}
