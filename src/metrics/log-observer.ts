/**
 * Most counters follow events the transports already log (stored, refused, each HTTP
 * request, sweeps), so the metrics see exactly what the logs say and the SMTP and HTTP code
 * needs no second call per event. The observer sits in front of the level filter:
 * LOG_LEVEL=silent still counts.
 */
import type { Logger } from '../log.ts'
import type { AppMetrics } from './app-metrics.ts'

type LogFields = Record<string, unknown>

const OPERATIONS: Array<[method: string, pattern: RegExp, operation: string]> = [
  ['GET', /^\/health$/, 'getHealth'],
  ['POST', /^\/v1\/inboxes$/, 'createInbox'],
  ['GET', /^\/v1\/inboxes$/, 'listInboxes'],
  ['GET', /^\/v1\/inboxes\/[^/]+$/, 'getInbox'],
  ['DELETE', /^\/v1\/inboxes\/[^/]+$/, 'deleteInbox'],
  ['GET', /^\/v1\/inboxes\/[^/]+\/messages$/, 'listOrWaitForMessages'],
  ['GET', /^\/v1\/messages\/[^/]+$/, 'getMessage'],
  ['DELETE', /^\/v1\/messages\/[^/]+$/, 'deleteMessage'],
  ['GET', /^\/v1\/attachments\/[^/]+$/, 'downloadAttachment'],
  ['GET', /^\/v1\/usage$/, 'getUsage'],
  ['GET', /^\/metrics$/, 'metrics'],
  ['GET', /^\/ready$/, 'ready'],
]

/** The spec's operation name; anything else is "other", so hostile paths cannot add series. */
export function operationOf(method: string, path: string): string {
  for (const [m, pattern, operation] of OPERATIONS) if (m === method && pattern.test(path)) return operation
  return 'other'
}

const REFUSAL_CODES = new Set(['rate_limit_exceeded', 'long_poll_limit_exceeded'])

function observe(metrics: AppMetrics, event: string, fields: LogFields): void {
  switch (event) {
    case 'smtp_message_stored':
      metrics.messageStored(Array.isArray(fields.message_ids) ? fields.message_ids.length : 1)
      return
    case 'smtp_refused':
      metrics.messagesRefused.inc({ reason: String(fields.reason) })
      return
    case 'smtp_error':
      metrics.messagesRefused.inc({ reason: 'error' })
      return
    case 'http_request':
      metrics.httpRequests.inc({
        operation: operationOf(String(fields.method), String(fields.path)),
        status: String(fields.status),
      })
      if (REFUSAL_CODES.has(String(fields.error_code))) metrics.httpRefusals.inc({ code: String(fields.error_code) })
      return
    case 'stored_bytes_corrupt':
      metrics.storedBytesCorrupt.inc({ kind: String(fields.kind) })
      return
    case 'retention_sweep':
      metrics.sweeperDeleted.inc({ kind: 'messages' }, Number(fields.deleted_messages) || 0)
      metrics.sweeperDeleted.inc({ kind: 'idempotency_records' }, Number(fields.deleted_idempotency_records) || 0)
      return
  }
}

export function observedLogger(logger: Logger, metrics: AppMetrics): Logger {
  const wrap =
    (level: keyof Logger) =>
    (event: string, fields: LogFields = {}) => {
      observe(metrics, event, fields)
      logger[level](event, fields)
    }
  return { debug: wrap('debug'), info: wrap('info'), warn: wrap('warn'), error: wrap('error') }
}
