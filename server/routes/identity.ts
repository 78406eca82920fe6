import * as v from 'valibot'
import type { Route } from './route.ts'

const organizationRef = v.strictObject({ slug: v.string(), name: v.string() })

export const identityRoutes: Route[] = [
  {
    kind: 'operation', method: 'GET', path: '/api/v1/me', tag: 'Identity', operation: 'me',
    summary: 'The key holder, the selected organization, their organizations and capabilities',
    response: v.strictObject({
      user: v.strictObject({ id: v.string(), email: v.string(), name: v.string(), emailVerified: v.boolean() }),
      organization: v.strictObject({ id: v.string(), slug: v.string(), name: v.string(), role: v.picklist(['owner', 'admin', 'developer', 'editor', 'member']) }),
      organizations: v.array(organizationRef),
      capabilities: v.strictObject({
        developer: v.boolean(), deploymentEditor: v.boolean(), notificationExport: v.boolean(),
        skillPublish: v.boolean(), actAs: v.boolean(),
      }),
      key: v.strictObject({ name: v.string(), expiresAt: v.nullable(v.number()) }),
    }),
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/teams', tag: 'Identity', operation: 'teams_list',
    family: 'unpaginated', summary: "The organization's teams, marking those the key holder belongs to",
    response: v.strictObject({ teams: v.array(v.strictObject({ id: v.string(), name: v.string(), member: v.boolean() })) }),
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/models', tag: 'Identity', operation: 'models_list',
    family: 'unpaginated',
    summary: "The organization's model catalog, the coding harnesses agents may run on and the tool grants they may hold",
    response: v.strictObject({
      models: v.array(v.strictObject({
        id: v.string(), providerSlug: v.string(), contextWindow: v.number(),
        maxOutputTokens: v.optional(v.number()), capabilities: v.array(v.string()),
        pricing: v.optional(v.record(v.string(), v.unknown())), default: v.boolean(),
      })),
      harnesses: v.array(v.strictObject({ id: v.string(), name: v.string() })),
      // Beyond the spec's {models, harnesses}: where clients discover an agent's tool grants.
      tools: v.array(v.strictObject({ id: v.string(), description: v.string() })),
    }),
  },
]
