// Sign-in, the second factor and sign-out (SPEC "What the service does" item 6; DESIGN
// "Sessions"). The password is checked here with the stored scrypt hash; attempts are
// throttled per source address and per account before any hash is computed; the
// session cookie is rotated at every sign-in and at the second factor.
import type { IncomingMessage } from 'node:http'
import * as OTPAuth from 'otpauth'
import * as v from 'valibot'
import type { Sql } from '../core/db/connection.ts'
import type { Config } from '../core/config.ts'
import { limit } from '../core/limits.ts'
import type { KeylessRoute, Reply } from '../routes/route.ts'
import { hashPassword, verifyPassword } from '../auth/credentials.ts'
import { clearedSessionCookie, newSessionToken, readCookie, requireSameOrigin, SESSION_COOKIE, sessionCookie, sessionTokenHash } from '../auth/session.ts'
import { HttpError } from '../transport/errors.ts'
import { html, htmlReply, page, redirect, safeReturn } from './html.ts'
import { clientAddress } from '../transport/client-address.ts'

/** Form fields of a urlencoded body; anything else is ignored. */
export function formFields(body: unknown): URLSearchParams {
  return new URLSearchParams(Buffer.isBuffer(body) ? body.toString('utf8') : '')
}

const returnQuery = v.strictObject({ return: v.optional(v.string()) })

// Spent on an unknown address too, so the answer's timing does not tell whether an
// account exists.
const placeholderHash = hashPassword('no account has this password')

export function signInRoutes(requests: Sql, config: Config): KeylessRoute[] {
  const lifetime = limit('session.lifetimeSeconds')
  const scale = config.RATE_LIMIT_SCALE
  const budgets = {
    address: (ip: string) => ({ key: `signin-address:${ip}`, perMinute: limit('rate.signInAddress.perMinute') * scale, burst: limit('rate.signInAddress.burst') * scale }),
    account: (who: string) => ({ key: `signin-account:${who}`, perMinute: limit('rate.signInAccount.perMinute') * scale, burst: limit('rate.signInAccount.burst') * scale }),
  }

  const throttled = async (req: IncomingMessage, account: string): Promise<number> => {
    const [row] = await requests<{ wait: number }[]>`
      select app.take_tokens(${requests.json([budgets.address(clientAddress(req)), budgets.account(account)] as never)}) as wait`
    return row!.wait
  }
  const tooMany = (wait: number, title: string, form: ReturnType<typeof html>) => htmlReply(429, page(title, html`
    <div class="error" role="alert">Too many attempts. Wait ${wait} seconds, then try again.</div>${form}`), { 'retry-after': String(wait) })
  const sameOrigin = (req: IncomingMessage): Reply | null => {
    try {
      requireSameOrigin(req, config.publicBaseUrl)
      return null
    } catch (error) {
      if (!(error instanceof HttpError)) throw error
      return htmlReply(403, page('Request refused', html`<div class="error" role="alert">${error.message}</div>
        <p><a href="/app/sign-in">Go to the sign-in page</a></p>`))
    }
  }
  const holder = async (req: IncomingMessage) => {
    const token = readCookie(req, SESSION_COOKIE)
    if (!token) return null
    const [row] = await requests<{ holder: { userId: string } | null }[]>`select app.session_holder(${sessionTokenHash(token)}) as holder`
    return row!.holder
  }

  const signInForm = (returnTo: string, email = '') => html`
    <section aria-labelledby="sign-in-heading">
      <h2 id="sign-in-heading">Sign in with your email and password</h2>
      <form method="post" action="/app/sign-in">
        <input type="hidden" name="return" value="${returnTo}">
        <label for="email">Email</label>
        <input type="email" id="email" name="email" autocomplete="username" required value="${email}">
        <label for="password">Password</label>
        <input type="password" id="password" name="password" autocomplete="current-password" required>
        <button type="submit">Sign in</button>
      </form>
    </section>`
  const codeForm = (returnTo: string) => html`
    <section aria-labelledby="code-heading">
      <h2 id="code-heading">Enter the code from your authenticator app</h2>
      <form method="post" action="/app/sign-in/totp">
        <input type="hidden" name="return" value="${returnTo}">
        <label for="code">Six-digit code</label>
        <input type="text" id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
        <button type="submit">Continue</button>
      </form>
    </section>`


  return [
    {
      kind: 'keyless', method: 'GET', path: '/app/sign-in', tag: 'App', summary: 'The sign-in page', undocumented: true, query: returnQuery,
      handle: async (req, input) => {
        const returnTo = safeReturn(input.query.return)
        if (await holder(req)) return redirect(returnTo)
        return htmlReply(200, page('Sign in', signInForm(returnTo)))
      },
    },
    {
      kind: 'keyless', method: 'POST', path: '/app/sign-in', tag: 'App', summary: 'Signs a person in', undocumented: true, rawBody: true,
      bodyLimit: 16 * 1024,
      handle: async (req, input) => {
        const refused = sameOrigin(req)
        if (refused) return refused
        const form = formFields(input.body)
        const email = (form.get('email') ?? '').trim()
        const password = form.get('password') ?? ''
        const returnTo = safeReturn(form.get('return'))
        if (!email || !password) {
          return htmlReply(400, page('Sign in', html`<div class="error" role="alert">Enter your email and your password.</div>${signInForm(returnTo, email)}`))
        }
        const wait = await throttled(req, email.toLowerCase())
        if (wait > 0) return tooMany(wait, 'Sign in', signInForm(returnTo, email))
        const [row] = await requests<{ person: { userId: string; passwordHash: string | null; hasTotp: boolean } | null }[]>`
          select app.sign_in_lookup(${email}) as person`
        const person = row!.person
        const right = person?.passwordHash ? await verifyPassword(password, person.passwordHash)
          : (await verifyPassword(password, await placeholderHash), false)
        if (!person || !right) {
          return htmlReply(401, page('Sign in', html`<div class="error" role="alert">That email and password do not match an account.</div>${signInForm(returnTo, email)}`))
        }
        const token = newSessionToken()
        const previous = readCookie(req, SESSION_COOKIE)
        await requests`select app.session_open(${person.userId}, ${sessionTokenHash(token)}, ${person.hasTotp},
          ${previous ? sessionTokenHash(previous) : null}, ${clientAddress(req)}, ${req.headers['user-agent'] ?? null})`
        const cookie = { 'set-cookie': sessionCookie(token, config.publicBaseUrl, lifetime) }
        return redirect(person.hasTotp ? `/app/sign-in/totp?return=${encodeURIComponent(returnTo)}` : returnTo, cookie)
      },
    },
    {
      kind: 'keyless', method: 'GET', path: '/app/sign-in/totp', tag: 'App', summary: 'The second-factor page', undocumented: true, query: returnQuery,
      handle: async (_req, input) => htmlReply(200, page('Sign in', codeForm(safeReturn(input.query.return)))),
    },
    {
      kind: 'keyless', method: 'POST', path: '/app/sign-in/totp', tag: 'App', summary: 'Completes a sign-in with a TOTP code', undocumented: true,
      rawBody: true, bodyLimit: 16 * 1024,
      handle: async (req, input) => {
        const refused = sameOrigin(req)
        if (refused) return refused
        const form = formFields(input.body)
        const returnTo = safeReturn(form.get('return'))
        const token = readCookie(req, SESSION_COOKIE)
        const [row] = await requests<{ factor: { userId: string; secret: string } | null }[]>`
          select app.session_pending_factor(${token ? sessionTokenHash(token) : ''}) as factor`
        const factor = row!.factor
        if (!token || !factor) return redirect(`/app/sign-in?return=${encodeURIComponent(returnTo)}`)
        const wait = await throttled(req, `user:${factor.userId}`)
        if (wait > 0) return tooMany(wait, 'Sign in', codeForm(returnTo))
        const step = verifyTotp(factor.secret, form.get('code') ?? '')
        const next = newSessionToken()
        const [done] = step === null ? [{ ok: false }] : await requests<{ ok: boolean }[]>`
          select app.session_complete(${sessionTokenHash(token)}, ${sessionTokenHash(next)}, ${step}) as ok`
        if (!done!.ok) {
          return htmlReply(401, page('Sign in', html`<div class="error" role="alert">That code is not right, or was already used. Enter the current code.</div>${codeForm(returnTo)}`))
        }
        return redirect(returnTo, { 'set-cookie': sessionCookie(next, config.publicBaseUrl, lifetime) })
      },
    },
    {
      kind: 'keyless', method: 'POST', path: '/app/sign-out', tag: 'App', summary: 'Signs the person out', undocumented: true, rawBody: true,
      bodyLimit: 16 * 1024,
      handle: async (req) => {
        const refused = sameOrigin(req)
        if (refused) return refused
        const token = readCookie(req, SESSION_COOKIE)
        if (token) await requests`select app.session_close(${sessionTokenHash(token)})`
        return redirect('/app/sign-in', { 'set-cookie': clearedSessionCookie(config.publicBaseUrl) })
      },
    },
  ]
}

export const TOTP_PERIOD_SECONDS = 30

export function totpFor(secret: string, label = '', issuer = 'Tale'): OTPAuth.TOTP {
  return new OTPAuth.TOTP({ issuer, label, algorithm: 'SHA1', digits: 6, period: TOTP_PERIOD_SECONDS, secret: OTPAuth.Secret.fromBase32(secret) })
}

/** The time step a code belongs to (one step of drift either way), or null when it is not right. */
export function verifyTotp(secret: string, code: string): number | null {
  if (!/^\d{6}$/.test(code.trim())) return null
  const delta = totpFor(secret).validate({ token: code.trim(), window: 1 })
  return delta === null ? null : Math.floor(Date.now() / 1000 / TOTP_PERIOD_SECONDS) + delta
}
