/** The audit log table, shared by an organisation's owners page and the operator's page. */
import { Time } from './shell.tsx'

interface AuditRow {
  id: number
  createdAt: string
  actor: string
  action: string
  target: string
  detail: string
  clientAddress: string
}

export function AuditTable(props: { events: AuditRow[]; olderHref?: string }) {
  return (
    <>
      <table class="audit">
        <thead>
          <tr>
            <th>When</th>
            <th>Who</th>
            <th>What</th>
            <th>On</th>
            <th>Detail</th>
            <th>From</th>
          </tr>
        </thead>
        <tbody>
          {props.events.map((event) => (
            <tr data-action={event.action}>
              <td>
                <Time at={event.createdAt} />
              </td>
              <td>{event.actor}</td>
              <td class="mono">{event.action}</td>
              <td class="mono">{event.target}</td>
              <td>{event.detail}</td>
              <td class="mono">{event.clientAddress || '-'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.events.length === 0 && <p class="muted">Nothing yet.</p>}
      {props.olderHref && (
        <p>
          <a href={props.olderHref}>Older entries</a>
        </p>
      )}
    </>
  )
}
