/**
 * This process's name in every lease row it writes (slot leases, quota reservations,
 * idempotency leases) and in what it announces on the wake bus: host, process id and a random
 * tail, so a restarted process is a new holder and never renews or frees what its predecessor
 * held. One name per process: its close gives back everything under it at once.
 */
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'

export const newLeaseHolder = (): string => `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`
