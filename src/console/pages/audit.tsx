/** @jsxImportSource preact */
/** The audit log table, shared by an organisation's owners page and the operator's page. */
import { Table, Time } from './shell.tsx'

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
      <Table class="audit" columns={['When', 'Who', 'What', 'On', 'Detail', 'From']}>
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
      </Table>
      {props.events.length === 0 && <p class="muted">Nothing yet.</p>}
      {props.olderHref && (
        <p>
          <a href={props.olderHref}>Older entries</a>
        </p>
      )}
    </>
  )
}
