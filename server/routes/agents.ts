// A project's agents: named configurations an agent run starts from. Shapes and
// lengths (UTF-16 code units, as JavaScript counts them) are checked here; the rules
// that need the catalogs, the other agents or the stored agent are in
// db/functions/0096_agents.sql.
import * as v from 'valibot'
import type { Route } from './route.ts'
import { timestamp, uuidParam } from '../transport/validation.ts'
import { component } from '../openapi/components.ts'
import { limit } from '../core/limits.ts'

const units = (max: number) => v.maxLength<string, number, string>(max, `at most ${max} UTF-16 code units`)
const nonBlank = (max: number) => v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be blank'), units(max))
const entries = limit('agent.maxListEntries')
const names = v.pipe(v.array(nonBlank(limit('agent.entryMaxUnits'))), v.maxLength(entries, `at most ${entries} entries`))
// Matched against a catalog in SQL; bounded here only as any reference is.
const reference = v.pipe(v.string(), v.minLength(1, 'must not be blank'), v.maxLength(200))

const agent = component('ProjectAgent', v.strictObject({
  id: v.string(), projectId: v.string(), name: v.string(),
  harness: v.pipe(v.string(), v.description('One of the harnesses GET /api/v1/models lists')),
  model: v.string(),
  modelProvider: v.pipe(v.nullable(v.string()), v.description('As saved; null lets the model\'s one provider serve it')),
  skills: v.array(v.string()), connectors: v.array(v.string()),
  tools: v.pipe(v.array(v.string()), v.description('Tool grants of GET /api/v1/models, each once, sorted')),
  secrets: v.pipe(v.array(v.string()), v.description('Organization secret names (never values), each once, sorted')),
  instructions: v.nullable(v.string()),
  createdAt: v.pipe(v.number(), v.integer()),
  updatedAt: v.pipe(v.number(), v.integer(), v.description('Sent back as expectedUpdatedAt for a conditional save')),
}))

const configuration = {
  name: v.pipe(v.string(), v.trim(), v.normalize('NFC'), v.minLength(1, 'must not be blank'), units(limit('agent.nameMaxUnits')),
    v.description('Unique in the project ignoring case')),
  harness: reference,
  model: v.pipe(reference, v.description('A model of the organization\'s catalog')),
  modelProvider: v.optional(v.nullable(v.pipe(reference,
    v.description('local or a provider of the organization; required when several providers serve the model')))),
  skills: names,
  connectors: names,
  tools: v.optional(names),
  secrets: v.optional(v.pipe(names, v.description('Only owners and admins change them; an editor\'s save sends the stored ones back'))),
  instructions: v.optional(v.nullable(v.pipe(v.string(), units(limit('agent.instructionsMaxUnits'))))),
}

const projectParams = v.strictObject({ id: uuidParam })
const agentParams = v.strictObject({ id: uuidParam, agentId: reference })

export const agentRoutes: Route[] = [
  {
    kind: 'operation', method: 'GET', path: '/api/v1/projects/:id/agents', tag: 'Agents', operation: 'agents_list',
    operationId: 'listAgents', family: 'unpaginated', summary: 'A project\'s agents by name', errors: [404],
    params: projectParams, response: v.strictObject({ agents: v.array(agent) }),
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/projects/:id/agents', tag: 'Agents', operation: 'agent_create',
    operationId: 'createAgent', summary: 'Create an agent in the project', status: 201, errors: [400, 403, 404, 409],
    params: projectParams, body: v.strictObject(configuration), response: v.strictObject({ agent }),
    location: (body, input) => `/api/v1/projects/${String(input.params.id)}/agents/${body.agent.id}`,
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/projects/:id/agents/:agentId', tag: 'Agents', operation: 'agent_get',
    operationId: 'getAgent', summary: 'Read an agent', errors: [404], params: agentParams, response: v.strictObject({ agent }),
  },
  {
    kind: 'operation', method: 'PUT', path: '/api/v1/projects/:id/agents/:agentId', tag: 'Agents', operation: 'agent_update',
    operationId: 'saveAgent',
    summary: 'Save an agent\'s full configuration (omitted optional fields are reset); the stored configuration writes nothing',
    errors: [400, 403, 404, 409], params: agentParams,
    body: v.strictObject({
      ...configuration,
      expectedUpdatedAt: v.optional(v.pipe(timestamp,
        v.description('The updatedAt read; an older one answers 409 PROJECT_AGENT_STALE and writes nothing'))),
    }),
    response: v.strictObject({ agent }),
  },
  {
    kind: 'operation', method: 'DELETE', path: '/api/v1/projects/:id/agents/:agentId', tag: 'Agents', operation: 'agent_delete',
    operationId: 'deleteAgent', summary: 'Delete an agent', status: 204, errors: [403, 404], params: agentParams,
  },
]
