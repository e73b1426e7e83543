/**
 * The Parley site widget: a launcher button and a chat panel in a shadow root. Embedded with
 *   <script src="https://parley.example/widget.js" data-parley-key="wk_..." async></script>
 * and, with identity verification, data-parley-identifier / data-parley-signature.
 */
import { Api, ApiError, type Attachment, type Message, type WidgetConfig } from './api.js';
import { css } from './styles.js';
import { textsFor, widgetLanguage, type WidgetTexts } from './texts.js';

const ICON_CHAT =
  '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2z"/></svg>';
const ICON_CLIP =
  '<svg viewBox="0 0 24 24" aria-hidden="true" width="18" height="18"><path d="M16.5 6.5l-8.2 8.2a2 2 0 0 0 2.8 2.8l8.5-8.5a4 4 0 0 0-5.7-5.7L5.4 11.8a6 6 0 0 0 8.5 8.5L21 13.2" stroke="currentColor" stroke-width="2" fill="none" stroke-linecap="round"/></svg>';
const ICON_CLOSE =
  '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M6 6l12 12M18 6L6 18" stroke="currentColor" stroke-width="2.5" fill="none"/></svg>';

type El = HTMLElement;

function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...kids: Array<Node | string>
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  for (const kid of kids) el.append(kid);
  return el;
}

function clip(): El {
  const el = h('span', { class: 'clip' });
  el.innerHTML = ICON_CLIP;
  return el;
}

function randomId(): string {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

function storage(): Storage | undefined {
  try {
    return window.localStorage;
  } catch {
    return undefined;
  }
}

class ParleyWidget {
  private readonly api: Api;
  private readonly host: El;
  private readonly root: ShadowRoot;
  private config: WidgetConfig | undefined;
  private readonly seen = new Set<string>();
  private socket: WebSocket | undefined;
  private retry = 0;
  private open = false;
  private unread = 0;
  private typingTimer: number | undefined;
  /** When this visitor last told the agents it is typing (0: it is not). */
  private typingSentAt = 0;

  /** The widget's own texts, in its language (texts.ts). */
  private tx: WidgetTexts = textsFor('en');

  /** The widget's settings: start() loads them before anything is drawn. */
  private get settings(): WidgetConfig {
    if (!this.config) throw new Error('Parley widget: used before its settings were loaded');
    return this.config;
  }

  /** Takes the settings and the language they ask for; the owner's texts still at default speak it too. */
  private configure(config: WidgetConfig): void {
    const language = widgetLanguage(config.language, navigator.languages ?? [navigator.language]);
    this.tx = textsFor(language);
    this.host.setAttribute('lang', language);
    const own = { ...config };
    for (const k of config.defaultTexts ?? []) own[k] = this.tx[k];
    this.config = own;
  }
  private pendingFile: File | undefined;
  private readonly storageKey: string;

  private launcher!: HTMLButtonElement;
  private panel!: El;
  private body!: El;
  private log!: El;
  private typing!: El;
  private error!: El;
  private input!: HTMLTextAreaElement;

  constructor(
    base: string,
    private readonly key: string,
    private readonly identity: { identifier?: string; signature?: string },
  ) {
    this.api = new Api(base);
    this.storageKey = `parley:${key}:${identity.identifier ?? ''}:token`;
    this.host = h('div', { id: 'parley-widget', 'data-state': 'loading' });
    this.root = this.host.attachShadow({ mode: 'open' });
    document.body.appendChild(this.host);
  }

  async start(): Promise<void> {
    try {
      this.configure(await this.api.config(this.key));
    } catch (err) {
      return this.fail(err);
    }
    this.render();
    const saved = storage()?.getItem(this.storageKey) || undefined;
    if (saved || this.settings.identityVerification || !this.needsForm()) {
      await this.connectSession(saved ? { token: saved } : {});
    } else {
      this.showForm();
    }
  }

  /** Widget unusable here (unknown key, site not allowed): nothing is shown; the reason is on the host element. */
  private fail(err: unknown): void {
    const code = err instanceof ApiError ? err.code : 'error';
    this.host.setAttribute('data-state', 'error');
    this.host.setAttribute('data-error', code);
    console.warn(`Parley widget: ${err instanceof Error ? err.message : String(err)} (${code})`);
  }

  private needsForm(): boolean {
    const c = this.settings;
    return c.offline || Object.values(c.preChat).some((m) => m !== 'off');
  }

  private render(): void {
    const c = this.settings;
    const style = h('style');
    style.textContent = css(/^#[0-9a-f]{6}$/i.test(c.color) ? c.color : '#2563eb');
    this.launcher = h('button', {
      class: 'launcher',
      type: 'button',
      'aria-label': this.tx.open(c.title),
      'aria-expanded': 'false',
      'aria-controls': 'parley-panel',
    });
    this.launcher.innerHTML = ICON_CHAT;
    this.launcher.addEventListener('click', () => this.toggle());

    const close = h('button', { type: 'button', 'aria-label': this.tx.close });
    close.innerHTML = ICON_CLOSE;
    close.style.width = '32px';
    close.addEventListener('click', () => this.toggle(false));
    const title = h('h2', { id: 'parley-title' }, c.title);
    this.body = h('div', { style: 'display:flex;flex-direction:column;flex:1;min-height:0' });
    this.panel = h(
      'div',
      { class: 'panel', id: 'parley-panel', role: 'dialog', 'aria-labelledby': 'parley-title', hidden: '' },
      h('header', {}, title, close),
      ...(c.offline ? [h('div', { class: 'banner', role: 'status' }, c.offlineMessage)] : []),
      this.body,
    );
    this.panel.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.stopPropagation();
        this.toggle(false);
      }
    });
    this.root.append(style, this.panel, this.launcher);
    this.host.setAttribute('data-state', 'ready');
  }

  private toggle(force?: boolean): void {
    this.open = force ?? !this.open;
    this.panel.hidden = !this.open;
    this.launcher.setAttribute('aria-expanded', String(this.open));
    this.launcher.setAttribute('aria-label', (this.open ? this.tx.closeTitled : this.tx.open)(this.settings.title));
    if (this.open) {
      this.unread = 0;
      this.updateBadge();
      const first = this.body.querySelector<HTMLElement>('input, textarea');
      first?.focus();
      this.scrollDown();
    } else {
      this.launcher.focus();
    }
  }

  private updateBadge(): void {
    this.launcher.querySelector('.badge')?.remove();
    if (this.unread) this.launcher.append(h('span', { class: 'badge', 'aria-label': this.tx.unread(this.unread) }, String(this.unread)));
  }

  /** The pre-chat form (or the offline form: e-mail required while offline). */
  private showForm(message?: string): void {
    const c = this.settings;
    const fields: Array<[keyof WidgetConfig['preChat'], string, string, string]> = [
      ['name', this.tx.name, 'text', 'name'],
      ['email', this.tx.email, 'email', 'email'],
      ['phone', this.tx.phone, 'tel', 'tel'],
    ];
    const error = h('div', { class: 'error', role: 'alert' }, message ?? '');
    const form = h('form', { class: 'prechat', novalidate: '' }, h('p', {}, c.offline ? c.offlineMessage : c.greeting));
    for (const [name, label, type, autocomplete] of fields) {
      let mode = c.preChat[name];
      if (c.offline && name === 'email') mode = 'required';
      if (mode === 'off') continue;
      const input = h('input', { name, type, autocomplete, maxlength: name === 'email' ? '254' : '100' });
      if (mode === 'required') input.required = true;
      form.append(h('label', {}, `${label}${mode === 'required' ? ' *' : this.tx.optional}`, input));
    }
    const submit = h('button', { class: 'send', type: 'submit' }, this.tx.start);
    form.append(error, submit);
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const data = new FormData(form);
      const missing = Array.from(form.querySelectorAll('input')).filter((i) => i.required && !i.value.trim());
      if (missing.length) {
        error.textContent = this.tx.fillRequired;
        missing[0].focus();
        return;
      }
      submit.disabled = true;
      const values: Record<string, string> = {};
      data.forEach((v, k) => {
        if (typeof v === 'string' && v.trim()) values[k] = v.trim();
      });
      await this.connectSession(values, error);
      submit.disabled = false;
    });
    this.body.replaceChildren(form);
  }

  private async connectSession(fields: Record<string, string>, errorEl?: El): Promise<void> {
    try {
      const session = await this.api.session({ key: this.key, ...this.identity, ...fields });
      this.api.token = session.token;
      storage()?.setItem(this.storageKey, session.token);
      this.configure(session.widget);
      this.showChat();
      await this.loadHistory();
      this.connectSocket();
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(0, 'error', String(err), 0);
      if (e.status === 403 && (e.code === 'identity_required' || e.code === 'identity_invalid' || e.code === 'origin_not_allowed')) {
        this.host.setAttribute('data-error', e.code);
        this.body.replaceChildren(h('div', { class: 'error', role: 'alert' }, this.tx.unavailable));
        return;
      }
      if (fields.token) {
        // The saved session is gone: start over.
        storage()?.removeItem(this.storageKey);
        this.api.token = undefined;
        return this.needsForm() ? this.showForm() : this.connectSession({});
      }
      if (errorEl) errorEl.textContent = this.describe(e);
      else this.showForm(this.describe(e));
    }
  }

  private describe(e: ApiError, fallback = this.tx.failed): string {
    if (e.status === 429) return this.tx.tooMany(e.retryAfter || 60);
    // The server's texts are English: in another language the widget says it in its own words.
    if (this.tx === textsFor('en')) return e.message;
    return e.code === 'prechat_required' || e.code === 'validation_failed' ? this.tx.checkFields : fallback;
  }

  private showChat(): void {
    this.log = h('div', { class: 'log', role: 'log', 'aria-live': 'polite', 'aria-label': this.tx.messages });
    if (this.settings.greeting) this.log.append(h('div', { class: 'msg agent greeting' }, this.settings.greeting));
    this.typing = h('div', { class: 'typing', 'aria-live': 'polite' });
    this.error = h('div', { class: 'error', role: 'alert' });
    this.input = h('textarea', { rows: '1', placeholder: this.tx.placeholder, 'aria-label': this.tx.message, maxlength: '4000' });
    const fileInput = h('input', {
      type: 'file',
      class: 'sr',
      tabindex: '-1',
      'aria-hidden': 'true',
      accept: 'image/*,application/pdf,text/plain,.doc,.docx,.xls,.xlsx,.zip',
    });
    const attach = h('button', { class: 'icon', type: 'button', 'aria-label': this.tx.attach, title: this.tx.attach }, clip());
    attach.addEventListener('click', () => fileInput.click());
    const chip = h('div', { class: 'chip', hidden: '' });
    fileInput.addEventListener('change', () => {
      this.pendingFile = fileInput.files?.[0];
      fileInput.value = '';
      chip.replaceChildren();
      chip.hidden = !this.pendingFile;
      if (this.pendingFile) {
        const remove = h('button', { type: 'button', 'aria-label': this.tx.removeAttachment }, '×');
        remove.addEventListener('click', () => {
          this.pendingFile = undefined;
          chip.hidden = true;
          this.input.focus();
        });
        chip.append(clip(), this.pendingFile.name, remove);
      }
      this.input.focus();
    });
    const send = h('button', { class: 'send', type: 'submit' }, this.tx.send);
    const form = h('form', { class: 'compose' }, fileInput, attach, this.input, send);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.send();
    });
    this.input.addEventListener('input', () => this.tellTyping(this.input.value.trim() !== ''));
    this.input.addEventListener('blur', () => this.tellTyping(false));
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        void this.send();
      }
    });
    this.body.replaceChildren(this.log, this.typing, this.error, chip, form);
    if (this.open) this.input.focus();
  }

  private async loadHistory(): Promise<void> {
    try {
      const page = await this.api.history();
      for (const m of page.messages) this.append(m, false);
      this.scrollDown();
    } catch (err) {
      this.error.textContent = err instanceof ApiError ? this.describe(err) : this.tx.historyFailed;
    }
  }

  /**
   * Lets the agents see the visitor typing (docs/api/webhooks.md, the realtime stream): `true` again
   * every few seconds while typing goes on, `false` once when it stops (sent, emptied, left).
   */
  private tellTyping(typing: boolean): void {
    const ws = this.socket;
    if (ws?.readyState !== 1) return;
    const now = Date.now();
    if (typing ? now - this.typingSentAt < 3000 : this.typingSentAt === 0) return;
    this.typingSentAt = typing ? now : 0;
    ws.send(JSON.stringify({ type: 'typing', typing }));
  }

  private async send(): Promise<void> {
    const text = this.input.value.trim();
    const file = this.pendingFile;
    if (!text && !file) return;
    this.tellTyping(false);
    this.error.textContent = '';
    const clientId = randomId();
    const bubble = this.bubble({
      id: '',
      from: 'visitor',
      text,
      attachments: file ? [{ type: 'doc', url: '', name: file.name, size: file.size }] : [],
      at: Date.now(),
    });
    bubble.classList.add('pending');
    this.log.append(bubble);
    this.scrollDown();
    this.input.value = '';
    this.pendingFile = undefined;
    const chip = this.body.querySelector<HTMLElement>('.chip');
    if (chip) chip.hidden = true;
    try {
      let fileId: string | undefined;
      if (file) fileId = (await this.api.upload(file)).file.id;
      const { message } = await this.api.send(clientId, text, fileId);
      bubble.remove();
      this.append(message, false);
      this.scrollDown();
    } catch (err) {
      bubble.classList.remove('pending');
      bubble.classList.add('failed');
      this.error.textContent = err instanceof ApiError ? this.describe(err, this.tx.notSent) : this.tx.notSent;
      if (!this.input.value) this.input.value = text;
    }
  }

  private append(m: Message, live: boolean): void {
    if (this.seen.has(m.id)) return;
    this.seen.add(m.id);
    this.log.append(this.bubble(m));
    if (live && m.from === 'agent') {
      this.typing.textContent = '';
      if (!this.open) {
        this.unread++;
        this.updateBadge();
      }
    }
    this.scrollDown();
  }

  private bubble(m: Message): El {
    const el = h('div', { class: `msg ${m.from}`, 'data-id': m.id });
    if (m.text) el.append(m.text);
    for (const a of m.attachments) el.append(this.attachment(a));
    return el;
  }

  private attachment(a: Attachment): El {
    const url = a.url ? new URL(a.url, this.api.base).href : '';
    if (!url) return h('span', { class: 'file' }, clip(), a.name);
    const link = h('a', { href: url, target: '_blank', rel: 'noopener noreferrer', class: 'file' });
    if (a.type === 'photo') link.append(h('img', { src: url, alt: a.name || this.tx.image }));
    else link.append(clip(), `${a.name || this.tx.file}${a.size ? ` (${this.tx.kb(Math.max(1, Math.round(a.size / 1024)))})` : ''}`);
    return link;
  }

  private scrollDown(): void {
    if (this.log) this.log.scrollTop = this.log.scrollHeight;
  }

  /** Live replies and typing; reconnects with backoff and reloads history after a gap. */
  private connectSocket(): void {
    if (this.socket) return;
    let ws: WebSocket;
    try {
      ws = new WebSocket(this.api.socketUrl());
    } catch {
      this.reconnectLater();
      return;
    }
    this.socket = ws;
    let ping: number | undefined;
    ws.onmessage = (e) => {
      let data: { type?: string; message?: Message; typing?: boolean };
      try {
        data = JSON.parse(String(e.data));
      } catch {
        return;
      }
      if (data.type === 'ready') {
        this.host.setAttribute('data-socket', 'open');
        if (this.retry > 0) void this.loadHistory();
        this.retry = 0;
        ping = window.setInterval(() => ws.readyState === 1 && ws.send('{"type":"ping"}'), 25_000);
      } else if (data.type === 'message' && data.message) {
        this.append(data.message, true);
      } else if (data.type === 'typing') {
        window.clearTimeout(this.typingTimer);
        this.typing.textContent = data.typing ? this.tx.typing(this.settings.title) : '';
        if (data.typing) this.typingTimer = window.setTimeout(() => (this.typing.textContent = ''), 8000);
      }
    };
    ws.onclose = (e) => {
      window.clearInterval(ping);
      this.socket = undefined;
      this.host.setAttribute('data-socket', 'closed');
      if (e.code === 4401 || e.code === 4403) return;
      this.reconnectLater();
    };
  }

  private reconnectLater(): void {
    const delay = Math.min(30_000, 1000 * 2 ** this.retry++) * (0.75 + Math.random() / 2);
    window.setTimeout(() => this.connectSocket(), delay);
  }
}

function boot(): void {
  const script =
    (document.currentScript as HTMLScriptElement | null) ?? document.querySelector<HTMLScriptElement>('script[data-parley-key]');
  const key = script?.dataset.parleyKey;
  if (!script || !key) {
    console.warn('Parley widget: add data-parley-key to the <script> tag');
    return;
  }
  if (document.getElementById('parley-widget')) return;
  const base = new URL(script.src, location.href).origin;
  const { parleyIdentifier, parleySignature } = script.dataset;
  const start = () =>
    void new ParleyWidget(base, key, { identifier: parleyIdentifier || undefined, signature: parleySignature || undefined }).start();
  if (document.body) start();
  else document.addEventListener('DOMContentLoaded', start);
}

boot();
