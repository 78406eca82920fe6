// The service assembled: the request pool, the routes, the HTTP server.
import type { AddressInfo } from 'node:net'
import { createApp, API_VERSION } from './app.ts'
import type { Config } from './config.ts'
import { requestPool } from './db/connection.ts'
import { createLogger, type Logger } from './log.ts'
import { healthRoutes } from './routes/health.ts'
import { identityRoutes } from './routes/identity.ts'
import { projectRoutes } from './routes/projects.ts'
import type { Route } from './routes/route.ts'

export interface RunningService {
  url: string
  port: number
  close: () => Promise<void>
}

export function allRoutes(requests: Parameters<typeof healthRoutes>[0]): Route[] {
  return [...healthRoutes(requests, API_VERSION), ...identityRoutes, ...projectRoutes]
}

export async function startService(config: Config, databaseUrl: string, options: { port?: number; log?: Logger } = {}): Promise<RunningService> {
  const log = options.log ?? createLogger(config.LOG_LEVEL)
  const requests = requestPool(databaseUrl)
  const server = createApp({ config, requests, routes: allRoutes(requests), log })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? config.PORT, '0.0.0.0', () => resolve())
  })
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await requests.end({ timeout: 5 })
    },
  }
}
