/** @jsxImportSource preact */
/** Search across all of an organisation's inboxes: the filter form and the matching messages. */
import type { Membership } from '../../core/console/organizations.ts'
import type { MessageSummary } from '../../core/models.ts'
import { SEARCH_WINDOW } from '../../core/messages/search-organization.ts'
import type { InboxFilter } from '../inbox-filter.ts'
import { PATHS } from '../paths.ts'
import { Table, Time } from './shell.tsx'

/** The fields of a message filter, shared by an inbox's filter and the search across inboxes; `idPrefix` keeps ids unique. */
export function FilterFields(props: { idPrefix: string; filter: InboxFilter }) {
  const { idPrefix, filter } = props
  return (
    <>
      <div>
        <label for={`${idPrefix}-subject`}>Subject contains</label>
        <input id={`${idPrefix}-subject`} name="subject" type="text" value={filter.subject} maxLength={200} />
      </div>
      <div>
        <label for={`${idPrefix}-from`}>From</label>
        <input id={`${idPrefix}-from`} name="from" type="text" value={filter.from} maxLength={320} placeholder="a@b.example or @b.example" />
      </div>
      <div>
        <label for={`${idPrefix}-since`}>Received since (UTC)</label>
        <input id={`${idPrefix}-since`} name="since" type="text" value={filter.since} maxLength={40} placeholder="2026-11-25 14:30" />
      </div>
    </>
  )
}

export function SearchForm(props: { org: Membership; filter: InboxFilter }) {
  return (
    <form method="get" action={PATHS.search.link(props.org.organizationId)} class="filters" aria-label="Search all inboxes">
      <FilterFields idPrefix="search" filter={props.filter} />
      <div class="filter-actions">
        <button type="submit" class="secondary">
          Search all inboxes
        </button>
      </div>
    </form>
  )
}

export function SearchPage(props: { org: Membership; filter: InboxFilter; results: MessageSummary[] | null; limit: number; error?: string }) {
  const { org } = props
  return (
    <section class="card">
      <h2>Search all inboxes</h2>
      <SearchForm org={org} filter={props.filter} />
      {props.error && <p class="error">{props.error}</p>}
      <p class="muted">Looks through the organisation's newest {SEARCH_WINDOW.toLocaleString('en')} messages, in every active inbox.</p>
      {props.results !== null &&
        (props.results.length === 0 ? (
          <p id="no-results">No messages match.</p>
        ) : (
          <Table columns={['To', 'From', 'Subject', 'Received']}>
            {props.results.map((m) => (
              <tr>
                <td class="mono">{m.to}</td>
                <td>{m.from.name ? `${m.from.name} <${m.from.address}>` : m.from.address}</td>
                <td>
                  <a href={PATHS.message.link(org.organizationId, m.id)}>{m.subject || '(no subject)'}</a>
                </td>
                <td>
                  <Time at={m.received_at} />
                </td>
              </tr>
            ))}
          </Table>
        ))}
      {props.results !== null && props.results.length === props.limit && <p class="muted">The newest {props.limit} matches are shown; narrow the search for older ones.</p>}
    </section>
  )
}
