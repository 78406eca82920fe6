// oidc-provider's storage: every model (sessions, interactions, grants, codes, access
// tokens) in app.issuer_payloads through one SQL door (app.issuer_store), and clients
// read from the organizations' registrations (app.issuer_client) at every lookup, so a
// rotated secret or a disabled client takes effect at once on every process.
import type { Adapter, AdapterPayload } from 'oidc-provider'
import type { Sql } from '../core/db/connection.ts'

export function adapterFor(requests: Sql) {
  const store = async (operation: string, model: string, key: string, payload: unknown = null, expiresIn: number | null = null) => {
    const [row] = await requests<{ result: AdapterPayload | null }[]>`
      select app.issuer_store(${operation}, ${model}, ${key}, ${payload === null ? null : requests.json(payload as never)},
        ${expiresIn === null ? null : Math.ceil(expiresIn)}) as result`
    return row!.result ?? undefined
  }

  return class PostgresAdapter implements Adapter {
    constructor(readonly model: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
      await store('upsert', this.model, id, payload, expiresIn ?? null)
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      if (this.model === 'Client') {
        const [row] = await requests<{ client: AdapterPayload | null }[]>`select app.issuer_client(${id}) as client`
        return row!.client ?? undefined
      }
      return store('find', this.model, id)
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return store('find_by_uid', this.model, uid)
    }

    // The device flow is not enabled; nothing is ever stored by user code.
    async findByUserCode(): Promise<undefined> {
      return undefined
    }

    async consume(id: string): Promise<void> {
      await store('consume', this.model, id)
    }

    async destroy(id: string): Promise<void> {
      await store('destroy', this.model, id)
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await store('revoke_grant', this.model, grantId)
    }
  }
}
