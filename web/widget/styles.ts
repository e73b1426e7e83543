/** The widget's styles, inside its shadow root: nothing leaks to or from the host page. */
export const css = (color: string) => `
:host{all:initial;position:fixed;z-index:2147483000;right:0;bottom:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#111827}
*{box-sizing:border-box;font:inherit}
[hidden]{display:none!important}
button{cursor:pointer}
:focus-visible{outline:3px solid ${color};outline-offset:2px}
.launcher{position:fixed;right:20px;bottom:20px;width:56px;height:56px;border-radius:50%;border:0;background:${color};color:#fff;box-shadow:0 4px 14px rgba(0,0,0,.25);display:flex;align-items:center;justify-content:center}
.launcher svg{width:28px;height:28px;fill:currentColor}
.badge{position:absolute;top:-2px;right:-2px;min-width:18px;height:18px;border-radius:9px;background:#dc2626;color:#fff;font-size:11px;line-height:18px;text-align:center;padding:0 4px}
.panel{position:fixed;right:20px;bottom:88px;width:370px;max-width:calc(100vw - 24px);height:560px;max-height:calc(100vh - 110px);background:#fff;border-radius:14px;box-shadow:0 10px 40px rgba(0,0,0,.25);display:flex;flex-direction:column;overflow:hidden}
.panel[hidden]{display:none}
header{background:${color};color:#fff;padding:14px 16px;display:flex;align-items:center;gap:8px}
header h2{margin:0;font-size:16px;font-weight:600;flex:1;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
header button{background:transparent;border:0;color:#fff;font-size:22px;line-height:1;padding:2px 6px;border-radius:6px}
.log{flex:1;overflow-y:auto;padding:14px;display:flex;flex-direction:column;gap:8px;background:#f9fafb}
.msg{max-width:82%;padding:8px 12px;border-radius:14px;white-space:pre-wrap;word-wrap:break-word;overflow-wrap:anywhere}
.msg.agent{align-self:flex-start;background:#fff;border:1px solid #e5e7eb;border-bottom-left-radius:4px}
.msg.visitor{align-self:flex-end;background:${color};color:#fff;border-bottom-right-radius:4px}
.msg.pending{opacity:.6}
.msg.failed{outline:2px solid #dc2626}
.msg a{color:inherit}
.msg img{display:block;max-width:100%;max-height:200px;border-radius:8px;margin-top:4px}
.file{display:block;margin-top:4px;text-decoration:underline}
.note{align-self:center;font-size:12px;color:#6b7280;text-align:center;padding:0 8px}
.typing{font-size:12px;color:#6b7280;padding:0 16px 6px;background:#f9fafb;min-height:18px}
.banner{background:#fef3c7;color:#92400e;padding:10px 14px;font-size:13px}
.error{color:#b91c1c;font-size:13px;padding:6px 14px;background:#fef2f2}
.error:empty{display:none}
form.compose{display:flex;align-items:flex-end;gap:6px;padding:10px;border-top:1px solid #e5e7eb;background:#fff}
textarea{flex:1;resize:none;border:1px solid #d1d5db;border-radius:10px;padding:8px 10px;max-height:120px;min-height:38px;color:#111827;background:#fff}
.icon{border:0;background:transparent;width:36px;height:36px;border-radius:8px;color:#4b5563;font-size:18px;display:flex;align-items:center;justify-content:center}
.send{border:0;background:${color};color:#fff;border-radius:10px;height:38px;padding:0 14px;font-weight:600}
.send:disabled{opacity:.5;cursor:default}
.chip{font-size:12px;color:#374151;padding:4px 12px 0;background:#fff;display:flex;gap:6px;align-items:center}
.chip button{border:0;background:transparent;color:#6b7280}
form.prechat{padding:16px;display:flex;flex-direction:column;gap:10px;overflow-y:auto;flex:1}
form.prechat p{margin:0 0 4px}
label{display:flex;flex-direction:column;gap:4px;font-size:13px;color:#374151}
input{border:1px solid #d1d5db;border-radius:8px;padding:8px 10px;color:#111827;background:#fff}
.clip{display:inline-flex;vertical-align:middle;margin-right:4px}
.clip svg{width:16px;height:16px}
.icon .clip{margin:0}.icon .clip svg{width:20px;height:20px}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
@media (max-width:480px){.panel{right:0;bottom:0;width:100vw;max-width:100vw;height:100%;max-height:100%;border-radius:0}.launcher{right:14px;bottom:14px}.launcher[aria-expanded=true]{display:none}}
`;
