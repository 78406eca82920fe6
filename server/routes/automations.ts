import * as v from 'valibot'
import type { Input, Route } from './route.ts'
import { uuidParam } from '../transport/validation.ts'
import { component } from '../openapi/components.ts'
import { trigger as boundTrigger } from './trigger-shape.ts'

// In URLs an automation name writes each `/` as `__` (names never hold `__`).
export const automationName = v.pipe(v.string(), v.minLength(1), v.maxLength(400),
  v.description('The automation name with each "/" written as "__": sales/lead-intake is sales__lead-intake'),
  v.transform((s) => s.replaceAll('__', '/')))

const int = v.pipe(v.number(), v.integer())
const timestamp = v.pipe(v.number(), v.integer(), v.description('Epoch milliseconds'))
const inputs = v.pipe(v.record(v.string(), v.unknown()), v.description('The JSON Schema a run\'s input must match'))

const trigger = component('TriggerSummary', v.pipe(v.nullable(boundTrigger),
  v.description('The bound trigger and its health; null when none is bound')))
export const automation = component('Automation', v.strictObject({
  name: v.string(), latestVersion: int, deployedVersion: v.optional(int), projectIds: v.array(v.string()),
  description: v.string(), inputs, trigger, createdAt: timestamp, updatedAt: timestamp,
}))
const version = component('AutomationVersion', v.strictObject({
  name: v.string(), version: int, deployed: v.boolean(), latestVersion: int, deployedVersion: v.nullable(int),
  description: v.string(), inputs, document: v.record(v.string(), v.unknown()),
  testsPassed: v.nullable(v.boolean()), testsCheckedAt: v.nullable(timestamp), createdAt: timestamp,
}))
const installed = v.strictObject({ name: v.string(), added: v.boolean() })

const nameParams = v.strictObject({ name: automationName })
const projectNameParams = v.strictObject({ id: uuidParam, name: automationName })
const installLocation = (body: Record<string, any>, input: Input) => body.added
  ? `/api/v1/projects/${String(input.params.id ?? (input.body as { projectId: string }).projectId)}/automations/${String(body.name).replaceAll('/', '__')}`
  : undefined

export const automationRoutes: Route[] = [
  {
    kind: 'operation', method: 'GET', path: '/api/v1/automations', tag: 'Automations', operation: 'automations_list',
    family: 'unpaginated', summary: 'Every automation of the organization', response: v.strictObject({ automations: v.array(automation) }),
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/automations/:name', tag: 'Automations', operation: 'automation_get',
    summary: 'Read an automation version: latest (default), deployed, or a number', errors: [404], params: nameParams,
    query: v.strictObject({ version: v.optional(v.union([v.picklist(['latest', 'deployed']), v.pipe(v.string(), v.regex(/^\d{1,9}$/))],
      'must be latest, deployed or a version number')) }),
    response: version,
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/automations/:name/versions', tag: 'Automations',
    operation: 'automation_versions', family: 'unpaginated', summary: 'The versions of an automation, newest first',
    errors: [404], params: nameParams,
    response: v.strictObject({ deployedVersion: v.nullable(int), versions: v.array(v.strictObject({
      version: int, deployed: v.boolean(), testsPassed: v.nullable(v.boolean()), testsCheckedAt: v.nullable(timestamp),
      createdAt: timestamp,
    })) }),
  },
  {
    kind: 'operation', method: 'DELETE', path: '/api/v1/automations/:name', tag: 'Automations', operation: 'automation_delete',
    summary: 'Delete an automation with its versions and installs; its runs stay', status: 204, errors: [403, 404, 409],
    params: nameParams,
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/projects/:id/automations', tag: 'Automations', operation: 'project_automations',
    family: 'unpaginated', summary: 'The automations installed in a project', errors: [404],
    params: v.strictObject({ id: uuidParam }), response: v.strictObject({ automations: v.array(automation) }),
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/projects/:id/automations/:name', tag: 'Automations',
    operation: 'automation_install', operationId: 'installProjectAutomation', summary: 'Install an automation in a project', errors: [403, 404],
    params: projectNameParams, body: v.strictObject({}), response: installed,
    status: (body) => (body.added ? 201 : 200), location: installLocation,
  },
  {
    kind: 'operation', method: 'DELETE', path: '/api/v1/projects/:id/automations/:name', tag: 'Automations',
    operation: 'automation_uninstall', summary: 'Remove an automation from a project', status: 204, errors: [403, 404],
    params: projectNameParams,
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/automations/:name/projects', tag: 'Automations',
    operation: 'automation_install', operationId: 'installAutomationInProject', summary: 'Install an automation in a project (earlier variant)', errors: [403, 404],
    params: nameParams, body: v.strictObject({ projectId: uuidParam }), response: installed,
    status: (body) => (body.added ? 201 : 200), location: installLocation,
  },
]
