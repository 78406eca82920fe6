// The S3 object store behind project files: presigned uploads, existence checks,
// downloads and deletions, through @aws-sdk/client-s3. A deployment without
// S3_ENDPOINT and S3_BUCKET has no store, and its uploads answer 503
// OBJECT_STORE_UNCONFIGURED.
import {
  DeleteObjectsCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand, PutObjectCommand, S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3'
import { getSignedUrl } from '@aws-sdk/s3-request-presigner'
import type { Readable } from 'node:stream'

export interface ObjectStoreSettings {
  endpoint: string
  /** Where clients reach the store, for presigned URLs; the endpoint when unset. */
  publicEndpoint?: string
  bucket: string
  region: string
  forcePathStyle: boolean
  accessKeyId?: string
  secretAccessKey?: string
}

export interface StoredObject {
  size: number
  contentType: string | null
  etag: string | null
  lastModified: Date | null
}

export interface ObjectStore {
  /**
   * A URL accepting a PUT of the object's bytes until it expires. A declared
   * Content-Type and Content-Length are bound into the signature, so the store
   * refuses other types and other sizes.
   */
  presignPut(key: string, options: { contentType?: string; contentLength?: number; expiresInSeconds: number }): Promise<string>
  /** What is stored under key, or null when nothing is. */
  head(key: string): Promise<StoredObject | null>
  /** The object's bytes, or null when nothing is stored under key. */
  get(key: string, options?: { ifMatch?: string }): Promise<{ body: Readable; object: StoredObject } | null>
  /** Deletes keys; returns those the store could not delete. */
  deleteMany(keys: string[]): Promise<string[]>
  /** Resolves when the store answers for the bucket. */
  ping(): Promise<void>
}

/** The store could not be reached or failed; nothing was changed by the caller. */
export class ObjectStoreUnavailable extends Error {
  override name = 'ObjectStoreUnavailable'
}

/** The stored object is not the one expected (its ETag differs). */
export class ObjectChanged extends Error {
  override name = 'ObjectChanged'
}

const bareTag = (etag: string) => etag.replace(/^W\//, '').replaceAll('"', '')

export function createObjectStore(settings: ObjectStoreSettings): ObjectStore {
  const { bucket } = settings
  const clientFor = (endpoint: string) => new S3Client({
    endpoint,
    region: settings.region,
    forcePathStyle: settings.forcePathStyle,
    credentials: settings.accessKeyId && settings.secretAccessKey
      ? { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey }
      : undefined,
    // Checksums only where S3 requires them: by default the SDK would sign the CRC32
    // of an empty body into every presigned PUT, and stores that verify it (S3,
    // MinIO) would refuse the client's real bytes.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // Bounded: a store that does not answer must not hold a request for minutes.
    maxAttempts: 2,
    requestHandler: { connectionTimeout: 3_000, requestTimeout: 10_000 },
  })
  const client = clientFor(settings.endpoint)
  // The signature covers the host, so URLs for clients are signed for their address.
  const signer = settings.publicEndpoint ? clientFor(settings.publicEndpoint) : client

  const unavailable = (error: unknown): never => {
    throw new ObjectStoreUnavailable(`The object store is unavailable: ${(error as Error).message}`, { cause: error })
  }
  const isNotFound = (error: unknown) =>
    error instanceof S3ServiceException && (error.$metadata.httpStatusCode === 404 || error.name === 'NotFound' || error.name === 'NoSuchKey')
  const describe = (output: { ContentLength?: number; ContentType?: string; ETag?: string; LastModified?: Date }): StoredObject => ({
    size: output.ContentLength ?? 0,
    contentType: output.ContentType ?? null,
    etag: output.ETag ?? null,
    lastModified: output.LastModified ?? null,
  })

  return {
    async presignPut(key, { contentType, contentLength, expiresInSeconds }) {
      // Signing is local; it needs no round trip to the store.
      const signed = new Set<string>()
      if (contentType) signed.add('content-type')
      if (contentLength !== undefined) signed.add('content-length')
      return getSignedUrl(signer, new PutObjectCommand({ Bucket: bucket, Key: key, ContentType: contentType, ContentLength: contentLength }), {
        expiresIn: expiresInSeconds,
        ...(signed.size > 0 ? { signableHeaders: signed } : {}),
      })
    },
    async head(key) {
      try {
        return describe(await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key })))
      } catch (error) {
        if (isNotFound(error)) return null
        return unavailable(error)
      }
    },
    async get(key, options = {}) {
      try {
        const output = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key, IfMatch: options.ifMatch }))
        // Checked here too: not every S3-protocol store honours If-Match.
        if (options.ifMatch && output.ETag && bareTag(output.ETag) !== bareTag(options.ifMatch)) {
          (output.Body as Readable).destroy()
          throw new ObjectChanged(`The object ${key} no longer matches ${options.ifMatch}`)
        }
        return { body: output.Body as Readable, object: describe(output) }
      } catch (error) {
        if (error instanceof ObjectChanged) throw error
        if (isNotFound(error)) return null
        if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 412) {
          throw new ObjectChanged(`The object ${key} no longer matches ${options.ifMatch}`, { cause: error })
        }
        return unavailable(error)
      }
    },
    async deleteMany(keys) {
      const failed: string[] = []
      // DeleteObjects takes at most 1,000 keys a call; an absent key counts as deleted.
      for (let at = 0; at < keys.length; at += 1000) {
        const batch = keys.slice(at, at + 1000)
        try {
          const output = await client.send(new DeleteObjectsCommand({
            Bucket: bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
          }))
          for (const error of output.Errors ?? []) if (error.Key && error.Code !== 'NoSuchKey') failed.push(error.Key)
        } catch {
          failed.push(...batch)
        }
      }
      return failed
    },
    async ping() {
      try {
        await client.send(new HeadBucketCommand({ Bucket: bucket }))
      } catch (error) {
        unavailable(error)
      }
    },
  }
}
