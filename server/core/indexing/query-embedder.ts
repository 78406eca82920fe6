// A search query's vector, for the searches that run as a request (the knowledge
// search) or in a chat turn (the assistant's files_search). The organization's
// embeddings model and its provider key are read on a connection that may see them
// (the request role never can), and kept briefly so a burst of searches costs one
// lookup; a query seen recently is not embedded again. A search must never wait long
// on a provider nor fail because of one: after QUERY_EMBED_TIMEOUT_MS, or on any
// provider error, the query ranks by full text and similar words alone.
import { embed, type EmbeddingModel } from './embeddings.ts'
import type { Query } from './pipeline.ts'

export type QueryEmbedder = (organizationId: string, text: string) => Promise<number[] | null>

export const QUERY_EMBED_TIMEOUT_MS = 5_000
/** How long an organization's model (or its lack of one) is trusted before it is read again. */
export const MODEL_TTL_MS = 30_000
const MODELS_KEPT = 1_000
const VECTORS_KEPT = 512

export interface QueryEmbedderOptions {
  timeoutMs?: number
  modelTtlMs?: number
  warn?: (message: string, fields: Record<string, unknown>) => void
}

export function queryEmbedder(query: Query, options: QueryEmbedderOptions = {}): QueryEmbedder {
  const timeoutMs = options.timeoutMs ?? QUERY_EMBED_TIMEOUT_MS
  const modelTtlMs = options.modelTtlMs ?? MODEL_TTL_MS
  const models = new Map<string, { model: EmbeddingModel | null; until: number }>()
  const vectors = new Map<string, number[]>()

  async function modelOf(organizationId: string): Promise<EmbeddingModel | null> {
    const kept = models.get(organizationId)
    if (kept && kept.until > Date.now()) return kept.model
    const [row] = await query<{ model: EmbeddingModel | null }>('select app.embedding_model($1) as model', [organizationId])
    const model = row?.model ?? null
    remember(models, organizationId, { model, until: Date.now() + modelTtlMs }, MODELS_KEPT)
    return model
  }

  return async (organizationId, text) => {
    const model = await modelOf(organizationId)
    if (!model) return null
    // The key names the provider's address and model, so a changed model never answers
    // with another model's vector.
    const key = `${model.baseUrl}\n${model.id}\n${text}`
    const seen = vectors.get(key)
    if (seen) {
      remember(vectors, key, seen, VECTORS_KEPT)
      return seen
    }
    try {
      const [vector] = await embed(model, [text], AbortSignal.timeout(timeoutMs))
      if (!vector) return null
      remember(vectors, key, vector, VECTORS_KEPT)
      return vector
    } catch (error) {
      options.warn?.('query embedding failed; searched without vectors', { model: model.id, error: String(error) })
      return null
    }
  }
}

/** Least recently used first out: a Map keeps insertion order, so a hit is moved last. */
function remember<V>(map: Map<string, V>, key: string, value: V, capacity: number): void {
  map.delete(key)
  map.set(key, value)
  if (map.size > capacity) map.delete(map.keys().next().value!)
}
