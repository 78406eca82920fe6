// Embeddings through an organization's OpenAI-compatible provider: the catalog model
// that lists the 'embeddings' capability (app.embedding_model). Without one, search
// fuses full text and trigrams only. Failures are the caller's to decide on: the
// pipeline indexes without vectors, a search ranks without them.
import OpenAI from 'openai'

export interface EmbeddingModel { id: string; providerSlug: string; baseUrl: string; apiKey: string | null }

/** Inputs per provider call: large enough to be quick, small enough for any provider's cap. */
const BATCH = 64
const TIMEOUT_MS = 30_000

export async function embed(model: EmbeddingModel, inputs: string[], signal?: AbortSignal): Promise<number[][]> {
  const client = new OpenAI({ apiKey: model.apiKey ?? 'none', baseURL: model.baseUrl, maxRetries: 1, timeout: TIMEOUT_MS })
  const vectors: number[][] = []
  for (let start = 0; start < inputs.length; start += BATCH) {
    const batch = inputs.slice(start, start + BATCH)
    const answer = await client.embeddings.create({ model: model.id, input: batch, encoding_format: 'float' }, { signal })
    const ordered = [...answer.data].sort((a, b) => a.index - b.index)
    if (ordered.length !== batch.length) throw new Error(`the provider answered ${ordered.length} embeddings for ${batch.length} inputs`)
    for (const item of ordered) vectors.push(item.embedding as number[])
  }
  return vectors
}

/** The indexing service's embedder from its variables, or null when they name none. */
export function serviceEmbedder(config: { INDEXING_EMBEDDINGS_URL?: string; INDEXING_EMBEDDINGS_MODEL?: string;
  INDEXING_EMBEDDINGS_API_KEY?: string }): EmbeddingModel | null {
  if (!config.INDEXING_EMBEDDINGS_URL || !config.INDEXING_EMBEDDINGS_MODEL) return null
  return { id: config.INDEXING_EMBEDDINGS_MODEL, providerSlug: 'indexing', baseUrl: config.INDEXING_EMBEDDINGS_URL,
           apiKey: config.INDEXING_EMBEDDINGS_API_KEY ?? null }
}
