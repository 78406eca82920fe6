// A local S3-protocol server (s3rver) on loopback: the object store of `npm start`
// when no S3_ENDPOINT is configured, and of the tests. Objects live in a directory.
import net from 'node:net'
import S3rver from 's3rver'
import type { ObjectStoreSettings } from './object-store.ts'

export interface LocalS3 {
  settings: ObjectStoreSettings
  close: () => Promise<void>
}

// s3rver accepts these fixed credentials.
const LOCAL_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }

/** How a client reaches a local store listening on port. */
export function localS3Settings(port: number, bucket = 'tale'): ObjectStoreSettings {
  return { endpoint: `http://127.0.0.1:${port}`, bucket, region: 'us-east-1', forcePathStyle: true, ...LOCAL_CREDENTIALS }
}

/** Rejects with EADDRINUSE when port is taken: s3rver would raise it as an uncaught error instead. */
function claimable(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer()
    probe.once('error', reject)
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve()))
  })
}

export async function startLocalS3(options: { directory: string; port?: number; bucket?: string }): Promise<LocalS3> {
  const bucket = options.bucket ?? 'tale'
  if (options.port) await claimable(options.port)
  const server = new S3rver({
    address: '127.0.0.1', port: options.port ?? 0, silent: true, directory: options.directory,
    configureBuckets: [{ name: bucket }],
  })
  const { port } = await server.run()
  return {
    settings: localS3Settings(port, bucket),
    close: async () => {
      // Kept-alive connections would otherwise go on being served after close.
      const closing = server.close()
      server.httpServer?.closeAllConnections()
      await closing
    },
  }
}
