import type { Route } from './route.ts'

export const taskRoutes: Route[] = []
