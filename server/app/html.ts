// Server-rendered pages of the app: plain, accessible HTML that works without
// JavaScript. Every interpolated value is escaped by the `html` tag; a value already
// rendered as Html passes through as it is.
import type { Reply } from '../routes/route.ts'

export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}

const escapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\'': '&#39;' }
export const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (c) => escapes[c]!)

function piece(value: unknown): string {
  if (value instanceof Html) return value.text
  if (Array.isArray(value)) return value.map(piece).join('')
  if (value === null || value === undefined || value === false) return ''
  return escapeHtml(String(value))
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!
  values.forEach((value, i) => { out += piece(value) + strings[i + 1]! })
  return new Html(out)
}

const styles = `
:root { color-scheme: light; font-family: system-ui, sans-serif; line-height: 1.5; }
body { margin: 0; background: #f6f7f9; color: #1b1e23; }
header { background: #1b1e23; color: #fff; padding: .75rem 1.5rem; display: flex; gap: 1.5rem; align-items: center; flex-wrap: wrap; }
header a { color: #fff; }
header form { margin-left: auto; }
main { max-width: 46rem; margin: 2rem auto; padding: 0 1.5rem; }
h1 { font-size: 1.6rem; margin-top: 0; }
section { background: #fff; border: 1px solid #d5d9e0; border-radius: .5rem; padding: 1.25rem 1.5rem; margin-bottom: 1.5rem; }
label { display: block; font-weight: 600; margin-top: .75rem; }
input[type=text], input[type=email], input[type=password], input[type=date], select { display: block; width: 100%; max-width: 24rem; padding: .5rem; border: 1px solid #6b7280; border-radius: .25rem; font: inherit; box-sizing: border-box; }
button { margin-top: 1rem; padding: .5rem 1rem; font: inherit; border-radius: .25rem; border: 1px solid #1d4ed8; background: #1d4ed8; color: #fff; cursor: pointer; }
button.secondary { background: #fff; color: #1d4ed8; }
button:focus-visible, a:focus-visible, input:focus-visible, select:focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid #d5d9e0; vertical-align: top; }
.notice { border-left: 4px solid #1d4ed8; background: #eef2ff; padding: .75rem 1rem; margin-bottom: 1rem; }
.error { border-left: 4px solid #b91c1c; background: #fef2f2; padding: .75rem 1rem; margin-bottom: 1rem; }
code.secret { display: block; word-break: break-all; background: #111827; color: #f9fafb; padding: .75rem; border-radius: .25rem; }
.hint { color: #4b5563; font-size: .9rem; }
`

export interface Chrome {
  /** The signed-in person's name, shown beside the sign-out button. */
  person?: string
  /** The organizations to switch between; the switcher only changes what the pages show. */
  organizations?: { id: string; name: string; current: boolean }[]
}

export function page(title: string, body: Html, chrome: Chrome = {}): string {
  const nav = chrome.person ? html`
  <nav aria-label="Settings"><a href="/app/settings">Settings</a> · <a href="/app/settings/api-keys">API keys</a> · <a href="/app/settings/security">Security</a> · <a href="/app/settings/competences">Competences</a> · <a href="/app/settings/identity-clients">Identity clients</a></nav>
  ${chrome.organizations && chrome.organizations.length > 1 ? html`
  <form method="get" action="/app/settings"><label for="org-switch" style="display:inline;margin:0;font-weight:400">Organization</label>
    <select id="org-switch" name="orgId" style="display:inline;width:auto">${chrome.organizations.map((o) => html`<option value="${o.id}"${o.current ? new Html(' selected') : ''}>${o.name}</option>`)}</select>
    <button type="submit" class="secondary" style="margin:0">Switch</button></form>` : ''}
  <form method="post" action="/app/sign-out"><span>${chrome.person}</span> <button type="submit" class="secondary" style="margin:0">Sign out</button></form>` : ''
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Tale</title>
<style>${styles}</style>
</head>
<body>
<header><a href="/app/settings"><strong>Tale</strong></a>${nav}</header>
<main id="main">
<h1>${escapeHtml(title)}</h1>
${body.text}
</main>
</body>
</html>
`
}

const pageHeaders = {
  'cache-control': 'no-store',
  'content-security-policy': 'default-src \'none\'; style-src \'unsafe-inline\'; img-src data:; form-action \'self\'; frame-ancestors \'none\'; base-uri \'none\'',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
}

export function htmlReply(status: number, text: string, headers: Record<string, string> = {}): Reply {
  return { status, raw: text, contentType: 'text/html; charset=utf-8', headers: { ...pageHeaders, ...headers } }
}

export function redirect(location: string, headers: Record<string, string> = {}): Reply {
  return { status: 303, headers: { ...pageHeaders, location, ...headers } }
}

/** A path of this service to go back to after signing in; anything else goes to the settings. */
export function safeReturn(value: unknown): string {
  return typeof value === 'string' && /^\/(?![/\\])[\x21-\x7e]*$/.test(value) ? value : '/app/settings'
}
