// Webhook deliveries: a keyless POST to a trigger's secret URL starts a run of its
// automation. SQL decides each delivery in one statement (app.webhook_deliver: the
// sender's budget, the token, the scope, deduplication, the run); the server brings
// what SQL cannot do, the body's hash and the check of the run input against the
// deployed version's inputs schema.
//
// That check needs the deployed version, which only SQL knows: the first delivery to
// a token is answered `revalidate` with the version's schema, and the server calls
// again with its verdict. The version checked last is remembered per token, so in
// the steady state a delivery is one statement.
import { createHash } from 'node:crypto'
import * as v from 'valibot'
import type { Sql } from '../core/db/connection.ts'
import type { Input, KeylessRoute, Route } from './route.ts'
import { schemaViolations } from '../core/automations/document.ts'
import { limit } from '../core/limits.ts'
import { webhookBuckets, type RateBudgets } from '../auth/rate-budgets.ts'
import { HttpError, rateLimited, type Issue } from '../transport/errors.ts'
import { opaqueNotFound } from '../transport/not-found.ts'
import { webhookPayload } from '../transport/webhook-payload.ts'
import { component } from '../openapi/components.ts'
import { clientAddress } from '../transport/client-address.ts'

/** A small least-recently-used map: entries beyond the bound drop out, oldest use first. */
class Recent<K, V> {
  private readonly entries = new Map<K, V>()
  constructor(private readonly bound: number) {}
  get(key: K): V | undefined {
    const value = this.entries.get(key)
    if (value !== undefined) {
      this.entries.delete(key)
      this.entries.set(key, value)
    }
    return value
  }
  forget(key: K): void {
    this.entries.delete(key)
  }

  set(key: K, value: V): void {
    this.entries.delete(key)
    this.entries.set(key, value)
    if (this.entries.size > this.bound) this.entries.delete(this.entries.keys().next().value as K)
  }
}

const CACHED_TOKENS = 4096
const CACHED_VERSIONS = 2048
// A refusal lists at most this many issues: a large body can break a schema in
// thousands of places, and the first ones say what is wrong.
const MAX_ISSUES = 100

interface Version {
  automationId: string
  version: number
  check: (input: unknown) => Issue[]
}

type Outcome =
  | { status: number; body: Record<string, unknown> }
  | { error: { code: string; status: number; message: string; data?: Record<string, unknown>; retryAfter?: number; budget?: string } }
  | { revalidate: { automationId: string; version: number; inputs: unknown } }

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex')

// Idempotency-Key: the sender's delivery id, 1-255 printable ASCII characters.
const deliveryHeader = v.object({
  'idempotency-key': v.optional(v.pipe(v.string(), v.regex(/^[\x21-\x7e][\x20-\x7e]{0,254}$/, 'must be 1-255 printable ASCII characters'),
    v.description('The delivery id: a repeat within 24 hours starts no second run'))),
})
const accepted = component('WebhookAccepted', v.strictObject({
  runId: v.pipe(v.string(), v.description('Read it with an API key through the run routes')),
  duplicate: v.optional(v.pipe(v.literal(true), v.description('This delivery was accepted before; no run was started'))),
}))

/** onAccepted: told of each accepted delivery, and whether it repeated one (the metrics count them). */
export function webhookRoutes(requests: Sql, budgets: RateBudgets, onAccepted: (duplicate: boolean) => void = () => {}): Route[] {
  const buckets = webhookBuckets(budgets)
  const versions = new Recent<string, Version>(CACHED_VERSIONS)
  // Per token hash, the version its automation had when a delivery last checked.
  const lastChecked = new Recent<string, Version>(CACHED_TOKENS)

  function versionOf(automationId: string, version: number, inputs: unknown): Version {
    const key = `${automationId}:${version}`
    let known = versions.get(key)
    if (!known) {
      // A version's document never changes, so neither does its schema's verdict.
      const check = inputs === null || inputs === undefined ? () => []
        : (input: unknown) => schemaViolations(inputs, input, '').slice(0, MAX_ISSUES)
          .map((p) => ({ path: p.path.replace(/^\./, ''), message: p.message }))
      known = { automationId, version, check }
      versions.set(key, known)
    }
    return known
  }

  async function deliver(args: Record<string, unknown>): Promise<Outcome> {
    const [row] = await requests<{ outcome: Outcome }[]>`select app.webhook_deliver(${requests.json(args as never)}) as outcome`
    return row!.outcome
  }

  async function handle(req: { socket: { remoteAddress?: string } }, input: Input) {
    const raw = input.body as Buffer
    const payload = webhookPayload(raw)
    const runInput = { trigger: 'webhook', payload }
    const tokenHash = sha256(String(input.params.token))
    const verdict = (known: Version) => ({ automationId: known.automationId, version: known.version, issues: known.check(runInput) })
    const args: Record<string, unknown> = {
      tokenHash,
      projectId: input.params.project_id ?? null,
      deliveryId: input.headers?.['idempotency-key'] ?? null,
      bodyHash: sha256(raw),
      payload,
      senderBucket: buckets.sender(clientAddress(req)),
      triggerBudget: { perMinute: budgets.webhookTrigger.perMinute, burst: budgets.webhookTrigger.burst },
      validated: null,
    }
    const cached = lastChecked.get(tokenHash)
    if (cached) args.validated = verdict(cached)
    let outcome = await deliver(args)
    // A deploy between the two calls hands back the newer version: check again.
    for (let round = 0; 'revalidate' in outcome && round < 3; round += 1) {
      const { automationId, version, inputs } = outcome.revalidate
      const known = versionOf(automationId, version, inputs)
      lastChecked.set(tokenHash, known)
      outcome = await deliver({ ...args, validated: verdict(known) })
    }
    if ('revalidate' in outcome) throw new Error('the deployed version kept changing during a webhook delivery')
    if ('error' in outcome) {
      // A token that no longer names a trigger is forgotten, so a later delivery to it
      // is not checked against a schema first and answers as fast as any unknown token.
      if (outcome.error.status === 404) lastChecked.forget(tokenHash)
      throw refusal(outcome.error)
    }
    onAccepted(outcome.body.duplicate === true)
    return { status: outcome.status, body: outcome.body }
  }

  const common: Omit<KeylessRoute, 'path' | 'summary'> = {
    kind: 'keyless', method: 'POST', tag: 'Webhooks', rawBody: true, versioned: true, opaque: true, status: 202,
    bodyLimit: limit('webhook.maxBodyBytes'), headers: deliveryHeader, response: accepted,
    errors: [400, 403, 404, 409, 413, 429, 500],
    handle,
  }
  return [
    {
      ...common, path: '/api/automations/webhook/:token', operationId: 'deliverWebhook',
      summary: 'Deliver to an automation installed in no project: starts a run with {trigger: "webhook", payload: <body>}',
      params: v.strictObject({ token: v.pipe(v.string(), v.description('The URL token: the whole credential')) }),
    },
    {
      ...common, path: '/api/projects/:project_id/automations/webhook/:token', operationId: 'deliverProjectWebhook',
      summary: 'Deliver to an automation installed in the project: starts a run there with {trigger: "webhook", payload: <body>}',
      params: v.strictObject({
        project_id: v.pipe(v.string(), v.description('A project the automation is installed in')),
        token: v.pipe(v.string(), v.description('The URL token: the whole credential')),
      }),
    },
  ]
}

function refusal(error: Extract<Outcome, { error: unknown }>['error']): HttpError {
  // Every token problem reads alike, whatever SQL said.
  if (error.status === 404) return opaqueNotFound()
  if (error.status === 429) return rateLimited(error.retryAfter ?? 1, error.message, error.budget)
  return new HttpError(error.status, error.code, error.message, error.data ?? {})
}
