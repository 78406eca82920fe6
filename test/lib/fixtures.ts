// A small organization most tests start from.
import type { SeedFile } from '../../server/admin/operations.ts'

type Role = 'owner' | 'admin' | 'developer' | 'editor' | 'member'

export function person(email: string, memberships: { org: string; role: Role; disabled?: boolean }[], keys = ['main']) {
  return {
    email, name: email.split('@')[0]!, password: null, emailVerified: true,
    memberships: memberships.map((m) => ({ disabled: false, ...m })),
    keys: keys.map((name) => ({ name, expiresAt: null })),
  }
}

export function acme(): Partial<SeedFile> {
  return {
    organizations: [
      { slug: 'acme', name: 'Acme', skillSharingPolicy: null },
      { slug: 'globex', name: 'Globex', skillSharingPolicy: null },
    ],
    users: [
      person('olive@acme.test', [{ org: 'acme', role: 'owner' }]),
      person('adam@acme.test', [{ org: 'acme', role: 'admin' }]),
      person('dev@acme.test', [{ org: 'acme', role: 'developer' }]),
      person('eddie@acme.test', [{ org: 'acme', role: 'editor' }]),
      person('max@acme.test', [{ org: 'acme', role: 'member' }]),
      person('gina@globex.test', [{ org: 'globex', role: 'owner' }]),
    ],
    teams: [{ org: 'acme', name: 'Core', members: ['eddie@acme.test'] }],
    projects: [],
  }
}

/** A seed file with every collection present, for the parts a test leaves out. */
export function seedFile(file: Partial<SeedFile>): SeedFile {
  return { organizations: [], users: [], teams: [], projects: [], providers: [], models: [], secrets: [], grants: [], ...file }
}
