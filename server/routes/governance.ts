// Governance grants: owners and admins of an organization grant its members
// competences (the notificationExport, skillPublish and actAs capabilities beyond
// their role), read a member's grants and revoke them. These are app routes: a
// session cookie, never an API key, with the organization named by ?orgId= and, on
// writes, an Origin of the service's own. Shapes are checked here; the rules (who
// may, the clock, the roster, a live grant already there) are in
// db/functions/0115_competence_grants.sql.
import * as v from 'valibot'
import type { Route } from './route.ts'
import { timestamp, uuidParam } from '../transport/validation.ts'
import { component } from '../openapi/components.ts'
import { limit } from '../core/limits.ts'

/** The competences a grant names, as the wire spells them (the vendor prefix included). */
export const COMPETENCES = ['tale:notifications.export', 'tale:skills.publish', 'tale:rest.act-as'] as const

const epochMs = v.pipe(v.number(), v.integer(), v.description('Epoch milliseconds'))
const evidenceUnits = limit('competence.evidenceMaxUnits')

const grant = component('CompetenceGrant', v.strictObject({
  recordId: v.string(),
  userId: v.string(),
  competence: component('Competence', v.picklist(COMPETENCES)),
  evidence: v.pipe(v.nullable(v.string()), v.description('Null for grants an operator made (seed file, admin CLI)')),
  expiresAt: v.pipe(v.nullable(epochMs), v.description('Null: never expires')),
  grantedBy: v.pipe(v.nullable(v.string()), v.description('The owner or admin who granted it; null for an operator')),
  createdAt: epochMs,
  revokedAt: v.nullable(epochMs),
  revokedBy: v.pipe(v.nullable(v.string()),
    v.description('Who revoked it, also by removing or disabling the member; null while live or when an operator did')),
  live: v.pipe(v.boolean(), v.description('Neither revoked nor expired: counts in the holder\'s /me capabilities')),
}))

// Every request names its organization; the route declares it so it is documented
// and checked (a missing or malformed orgId is 400 INVALID_QUERY).
const orgId = v.pipe(uuidParam, v.description('The organization, by id; the session\'s person must be an active member'))

export const governanceRoutes: Route[] = [
  {
    kind: 'operation', auth: 'session', method: 'POST', path: '/api/app/governance/competences', tag: 'Governance',
    operation: 'competence_grant_create', operationId: 'grantCompetence', status: 201, errors: [400, 403, 409],
    summary: 'Grant a member a competence, with evidence (Owner or Admin session; Origin required)',
    query: v.strictObject({ orgId }),
    body: v.strictObject({
      userId: v.pipe(uuidParam, v.description('An active member of the organization')),
      // Any text: an unknown name is the rule's refusal (COMPETENCE_CAPABILITY_UNKNOWN
      // naming the known ones), not a shape problem.
      competence: v.pipe(v.string(), v.maxLength(200),
        v.description(`One of ${COMPETENCES.join(', ')}; the prefix is required`)),
      evidence: v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be blank'),
        v.maxLength(evidenceUnits, `at most ${evidenceUnits} UTF-16 code units`),
        v.description('Why the member holds the competence; kept with the grant and in the audit log')),
      expiresAt: v.optional(v.nullable(v.pipe(timestamp, v.description('Must lie in the future; omitted or null: never expires')))),
    }),
    args: (input) => ({ ...(input.body as object) }),
    response: v.strictObject({ recordId: v.string() }),
  },
  {
    kind: 'operation', auth: 'session', method: 'GET', path: '/api/app/governance/competences', tag: 'Governance',
    operation: 'competence_grants_list', operationId: 'listCompetenceGrants', family: 'unpaginated', errors: [403],
    summary: 'A member\'s competence grants newest first, revoked and expired ones included (Owner or Admin session)',
    query: v.strictObject({ orgId, userId: v.pipe(uuidParam, v.description('The member, or a former member')) }),
    args: (input) => ({ userId: input.query.userId }),
    response: v.strictObject({ grants: v.array(grant) }),
  },
  {
    kind: 'operation', auth: 'session', method: 'POST', path: '/api/app/governance/competences/:recordId/revoke',
    tag: 'Governance', operation: 'competence_grant_revoke', operationId: 'revokeCompetence', errors: [403, 404],
    summary: 'Revoke a grant; it stays listed. Revoking a revoked grant answers its first revocation (Owner or Admin session; Origin required)',
    params: v.strictObject({ recordId: uuidParam }), query: v.strictObject({ orgId }),
    args: (input) => ({ recordId: input.params.recordId }),
    response: v.strictObject({ recordId: v.string(), revokedAt: epochMs, revokedBy: v.nullable(v.string()) }),
  },
]
