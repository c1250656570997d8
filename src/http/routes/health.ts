/**
 * GET /health: the spec's liveness answer. It says the process is up and answering, and
 * nothing about the database, on purpose: a platform routes by it (Fly's proxy stops sending a
 * machine traffic while its routing check fails), and with one shared database that is down
 * every machine would fail it together, so clients would meet the platform's own errors
 * instead of ours (`503` with `Retry-After`, SMTP `451`). Whether this instance can do its
 * work, the database included, is /ready's answer (src/http/routes/ready.ts).
 */
import { Elysia } from 'elysia'
import { HealthModel } from '../openapi/envelopes.ts'

export const healthRoutes = () =>
  new Elysia().get('/health', () => ({ status: 'ok' as const, service: 'pigeonhole' as const }), {
    response: { 200: HealthModel },
  })
