// A local S3-protocol server (s3rver) on loopback: the object store of `npm start`
// when no S3_ENDPOINT is configured, and of the tests. Objects live in a directory.
import S3rver from 's3rver'
import type { ObjectStoreSettings } from './object-store.ts'

export interface LocalS3 {
  settings: ObjectStoreSettings
  close: () => Promise<void>
}

// s3rver accepts these fixed credentials.
const LOCAL_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }

export async function startLocalS3(options: { directory: string; port?: number; bucket?: string }): Promise<LocalS3> {
  const bucket = options.bucket ?? 'tale'
  const server = new S3rver({
    address: '127.0.0.1', port: options.port ?? 0, silent: true, directory: options.directory,
    configureBuckets: [{ name: bucket }],
  })
  const { port } = await server.run()
  return {
    settings: { endpoint: `http://127.0.0.1:${port}`, bucket, region: 'us-east-1', forcePathStyle: true, ...LOCAL_CREDENTIALS },
    close: async () => {
      // Kept-alive connections would otherwise go on being served after close.
      const closing = server.close()
      server.httpServer?.closeAllConnections()
      await closing
    },
  }
}
