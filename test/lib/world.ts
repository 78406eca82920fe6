// The one way tests build what they stand on: a running service (with the job worker
// and a real object store when asked), the acme and globex organizations with a person
// per role, projects, and an HTTP client per person.
import type { Test } from 'tap'
import type { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js'
import { startTestService, type LogEntry, type RequestOptions, type Response, type TestService } from './service.ts'
import { acme } from './fixtures.ts'
import { localStore } from './object-store.ts'
import { mcpClient } from './mcp.ts'
import type { SeedFile, SeedResult } from '../../server/admin/operations.ts'

export type ProjectSeed = SeedFile['projects'][number]

/** An API key holder speaking to the service over HTTP. */
export interface Client {
  key: string
  get: (path: string, headers?: Record<string, string>) => Promise<Response>
  post: (path: string, body?: unknown, headers?: Record<string, string>) => Promise<Response>
  put: (path: string, body?: unknown, headers?: Record<string, string>) => Promise<Response>
  patch: (path: string, body?: unknown, headers?: Record<string, string>) => Promise<Response>
  del: (path: string, body?: unknown, headers?: Record<string, string>) => Promise<Response>
  request: (method: string, path: string, options?: Omit<RequestOptions, 'key'>) => Promise<Response>
  /** An MCP client speaking for the same key, closed with the test. */
  mcp: () => Promise<McpClient>
}

export function clientFor(t: Test, service: TestService, key: string): Client {
  const send = (method: string) => (path: string, body?: unknown, headers?: Record<string, string>) =>
    service.request(method, path, { key, body, headers })
  return {
    key,
    get: (path, headers) => service.request('GET', path, { key, headers }),
    post: send('POST'), put: send('PUT'), patch: send('PATCH'), del: send('DELETE'),
    request: (method, path, options = {}) => service.request(method, path, { ...options, key }),
    mcp: () => mcpClient(t, service.url, key),
  }
}

/** A project of acme created by its owner, with no grants unless given. */
export const project = (name: string, extra: Partial<ProjectSeed> = {}): ProjectSeed =>
  ({ org: 'acme', name, createdBy: 'olive@acme.test', access: [], ...extra })

/** Alpha (max reads, dev and eddie edit) and Beta (owners and admins only). */
export const defaultProjects = (): ProjectSeed[] => [
  project('Alpha', { access: [{ email: 'max@acme.test', level: 'read' }, { email: 'dev@acme.test', level: 'edit' },
    { email: 'eddie@acme.test', level: 'edit' }] }),
  project('Beta'),
]

export interface WorldOptions {
  /** Runs the job worker beside the service. Off by default. */
  worker?: boolean
  /** A real S3-protocol store for project files. Off by default (uploads answer 503). */
  store?: boolean
  env?: Record<string, string>
  logs?: LogEntry[]
  /** The projects to seed; Alpha and Beta by default. */
  projects?: ProjectSeed[]
  /** Replaces or adds collections of the seed file (organizations, users, providers...). */
  seed?: Partial<SeedFile>
}

export async function world(t: Test, options: WorldOptions = {}) {
  const local = options.store ? await localStore(t) : null
  const service = await startTestService(t, options.env ?? {}, options.logs,
    { objectStore: local?.store ?? null, worker: options.worker ?? false })
  const seeded: SeedResult = await service.seed({ ...acme(), projects: options.projects ?? defaultProjects(), ...options.seed })
  const keyOf = (email: string): string => {
    const key = seeded.users[email]?.keys.main
    if (!key) throw new Error(`${email} has no key named main`)
    return key
  }
  const as = (email: string): Client => clientFor(t, service, keyOf(email))
  return {
    service, local, seeded, as, keyOf,
    /** Project ids by name. */
    projects: Object.fromEntries(Object.entries(seeded.projects).map(([name, p]) => [name, p.id])) as Record<string, string>,
    alpha: seeded.projects.Alpha?.id as string,
    beta: seeded.projects.Beta?.id as string,
    // The people of acme() by role, built when a test takes them (a seed may replace them).
    get olive() { return as('olive@acme.test') },
    get adam() { return as('adam@acme.test') },
    get dev() { return as('dev@acme.test') },
    get eddie() { return as('eddie@acme.test') },
    get max() { return as('max@acme.test') },
    get gina() { return as('gina@globex.test') },
  }
}

export type World = Awaited<ReturnType<typeof world>>
