import { Elysia } from 'elysia'
import { UsageModel } from '../../core/common/models.ts'
import type { Services } from '../../core/common/services.ts'
import { getUsage } from '../../core/limits/usage.ts'
import { ErrorModel } from '../openapi/envelopes.ts'
import type { RequestRegistry } from '../request-registry.ts'

export const usageRoutes = (s: Services, requests: RequestRegistry) =>
  new Elysia().get('/v1/usage', ({ request }) => getUsage(s, requests.principal(request)), {
    response: { 200: UsageModel, 401: ErrorModel, 429: ErrorModel },
  })
