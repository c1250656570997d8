import { Elysia } from 'elysia'
import { HealthModel } from '../../core/models.ts'
import type { Services } from '../../core/services.ts'

export const healthRoutes = (s: Services) =>
  new Elysia().get(
    '/health',
    () => {
      // Touch the database so a health check fails when storage does.
      s.storage.sqlite.query('SELECT 1').get()
      return { status: 'ok' as const, service: 'pigeonhole' as const }
    },
    { response: { 200: HealthModel }, detail: { operationId: 'getHealth', summary: 'Liveness', security: [], tags: ['health'] } },
  )
