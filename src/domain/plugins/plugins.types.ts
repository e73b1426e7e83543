/** What `POST /plugins` takes (docs/api/integrations.md). */
export interface NewPluginInput {
  type: string;
  name?: string;
  metadata?: object;
}

export interface PluginSummary {
  id: number;
  type: string;
  name: string;
  status: string;
}

export interface CreatedPlugin extends PluginSummary {
  metadata: object;
  /** Shown once; only its SHA-256 is stored. */
  pluginToken: string;
}

/** Plugin tokens are opaque (not JWTs): they cannot be presented as a bearer token by mistake. */
export const PLUGIN_TOKEN_PREFIX = 'plg_';

/** Upper bound of a plugin's metadata, serialized. */
export const PLUGIN_METADATA_MAX_BYTES = 16 * 1024;
