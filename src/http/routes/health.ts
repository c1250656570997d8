import { Elysia } from 'elysia'
import type { Services } from '../../core/services.ts'
import { HealthModel } from '../openapi/envelopes.ts'

export const healthRoutes = (s: Services) =>
  new Elysia().get(
    '/health',
    () => {
      // Touch the database so a health check fails when storage does.
      s.storage.sqlite.query('SELECT 1').get()
      return { status: 'ok' as const, service: 'pigeonhole' as const }
    },
    { response: { 200: HealthModel } },
  )
