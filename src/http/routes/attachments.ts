import { Elysia } from 'elysia'
import type { Services } from '../../core/services.ts'
import type { RequestRegistry } from '../app.ts'

export const attachmentRoutes = (_s: Services, _requests: RequestRegistry) => new Elysia()
