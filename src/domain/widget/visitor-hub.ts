/**
 * The visitors' open sockets of this process, by widget and visitor: what an employee's reply or
 * typing indicator is pushed to. A visitor with several tabs has several sockets. Per process; the
 * pushes come from committed outbox events (visitor-push/), which every process reads, so the
 * process holding a visitor's socket pushes whatever process stored the reply.
 */
export class VisitorHub {
  private readonly sockets = new Map<string, Set<(message: string) => void>>();

  private static keyOf(integrationId: number, visitorId: string): string {
    return `${integrationId}\u0000${visitorId}`;
  }

  /** Adds a socket; returns the function that removes it. */
  add(integrationId: number, visitorId: string, send: (message: string) => void): () => void {
    const key = VisitorHub.keyOf(integrationId, visitorId);
    let set = this.sockets.get(key);
    if (!set) {
      set = new Set();
      this.sockets.set(key, set);
    }
    set.add(send);
    return () => {
      set.delete(send);
      if (!set.size) this.sockets.delete(key);
    };
  }

  /** Whether the visitor has an open socket in this process. */
  has(integrationId: number, visitorId: string): boolean {
    return this.sockets.has(VisitorHub.keyOf(integrationId, visitorId));
  }

  /** Sends to every open socket of the visitor; answers how many there were. */
  push(integrationId: number, visitorId: string, payload: unknown): number {
    const set = this.sockets.get(VisitorHub.keyOf(integrationId, visitorId));
    if (!set) return 0;
    const text = JSON.stringify(payload);
    for (const send of set) {
      try {
        send(text);
      } catch {
        // a socket closing meanwhile: its close handler removes it
      }
    }
    return set.size;
  }

  /** Open sockets (tests, metrics). */
  get size(): number {
    let n = 0;
    for (const set of this.sockets.values()) n += set.size;
    return n;
  }
}
