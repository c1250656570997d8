import { Elysia } from 'elysia'
import { touchDatabase } from '../../core/heartbeat.ts'
import type { Services } from '../../core/services.ts'
import { HealthModel } from '../openapi/envelopes.ts'

export const healthRoutes = (s: Services) =>
  new Elysia().get(
    '/health',
    async () => {
      // Touch the database so a health check fails when storage does.
      await touchDatabase(s)
      return { status: 'ok' as const, service: 'pigeonhole' as const }
    },
    { response: { 200: HealthModel } },
  )
