/** A background worker the process runs (webhook delivery, channel polling); `/ready` asks each. */
export interface BackgroundWorker {
  name: string;
  healthy(): boolean;
  stop(): Promise<void>;
  /** Shutdown: gives up work in progress that is safe to do again (called before `stop`). */
  abandon?(): void;
}
