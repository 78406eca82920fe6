// Who the issuer speaks about, and what it may say: the person signed in to the app
// (the session cookie, app.session_holder) and, for a client, the decision of
// app.issuer_account (live client, active membership of the client's organization,
// verified email, the organization's second-factor rule) with the claims it allows.
import type { IncomingMessage } from 'node:http'
import type { Sql } from '../core/db/connection.ts'
import { readCookie, SESSION_COOKIE, sessionTokenHash } from '../auth/session.ts'

export interface SessionHolder {
  userId: string
  sessionId: string
  /** Whether the sign-in proved a second factor. */
  mfa: boolean
}

/** The person the request's app session names: a complete, live session, else null. */
export async function sessionHolder(requests: Sql, req: IncomingMessage): Promise<SessionHolder | null> {
  const token = readCookie(req, SESSION_COOKIE)
  if (!token) return null
  const [row] = await requests<{ holder: SessionHolder | null }[]>`select app.session_holder(${sessionTokenHash(token)}) as holder`
  return row!.holder
}

export type Refusal = 'client_unknown' | 'not_member' | 'email_unverified' | 'mfa_required'

export interface IssuerAccount {
  claims: Record<string, unknown> & { sub: string }
  clientName: string
  organizationName: string
}

export async function issuerAccount(requests: Sql, clientId: string, userId: string, mfa: boolean): Promise<IssuerAccount | { refused: Refusal }> {
  const [row] = await requests<{ account: IssuerAccount | { refused: Refusal } }[]>`
    select app.issuer_account(${clientId}, ${userId}, ${mfa}) as account`
  return row!.account
}

/** Why the issuer will not sign a person in to a client, for people and for the client's error_description. */
export const refusalText: Record<Refusal, string> = {
  client_unknown: 'The application is not registered or is disabled.',
  not_member: 'You are not an active member of the organization this application belongs to.',
  email_unverified: 'Your email address is not verified; the application needs a verified one.',
  mfa_required: 'The organization requires a second factor: set one up under Settings > Security and sign in again.',
}

// How the sign-in was made, as RFC 8176 values on the login: the sign-in is a
// password, with a TOTP code when the session proved one.
export const amrFor = (mfa: boolean): string[] => (mfa ? ['pwd', 'otp'] : ['pwd'])
export const provedMfa = (amr: unknown): boolean => Array.isArray(amr) && amr.includes('otp')
