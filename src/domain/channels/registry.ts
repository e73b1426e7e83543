import type { ChannelAdapter } from './channel.js';

/**
 * The adapters of this process, by integration type. A type without an adapter can be recorded
 * (connected offline) but cannot send or refresh profiles. Built by createServices with the
 * adapters Parley ships; tests register adapters that talk to local fake providers.
 */
export class ChannelRegistry {
  private readonly adapters = new Map<string, ChannelAdapter>();

  constructor(adapters: ChannelAdapter[] = []) {
    for (const adapter of adapters) this.register(adapter);
  }

  register(adapter: ChannelAdapter): void {
    this.adapters.set(adapter.type, adapter);
  }

  get(type: string): ChannelAdapter | undefined {
    return this.adapters.get(type);
  }
}
