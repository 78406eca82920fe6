import type { Route } from './route.ts'

export const notificationRoutes: Route[] = []
