import type OAuth2Server from '@node-oauth/oauth2-server';

export type OAuthLibrary = typeof OAuth2Server;

let loading: Promise<OAuthLibrary> | undefined;

/**
 * @node-oauth/oauth2-server, loaded when OAuth is first used rather than at start-up: it and its
 * content-type tables are a tenth of the server's code, and most processes never see an OAuth
 * request (docs/performance.md, "Start-up").
 */
export function oauthLibrary(): Promise<OAuthLibrary> {
  loading ??= import('@node-oauth/oauth2-server').then((m) => m.default);
  return loading;
}
