/** @jsxImportSource preact */
/** Search across all of an organisation's inboxes: the filter form and the matching messages. */
import type { Membership } from '../../core/organizations/organizations.ts'
import type { MessageSummary } from '../../core/common/models.ts'
import { SEARCH_WINDOW } from '../../core/messages/search-organization.ts'
import { TEXT_SEARCH_WINDOW } from '../../core/messages/search-filters.ts'
import { TEXT_SEARCH_CHARS } from '../../core/inbound/search-text.ts'
import {
  emptyFilter,
  FILTER_LIMITS,
  filterHref,
  type InboxFilter,
  isFiltered,
  usesFormFields,
} from '../inbox-filter.ts'
import { MAX_LINE } from '../../core/messages/search-line.ts'
import { PATHS } from '../paths.ts'
import { Table, Time } from './shell.tsx'

/**
 * The fields of a message filter, shared by an inbox's filter and the search across inboxes;
 * `idPrefix` keeps ids unique. The recipient is asked only across inboxes: in one inbox it
 * is always the inbox's own address.
 */
function FilterFields(props: { idPrefix: string; filter: InboxFilter; recipient?: boolean }) {
  const { idPrefix, filter } = props
  const id = (name: string) => `${idPrefix}-${name}`
  return (
    <>
      <div>
        <label for={id('subject')}>Subject contains</label>
        <input id={id('subject')} name="subject" type="text" value={filter.subject} maxLength={FILTER_LIMITS.subject} />
      </div>
      <div>
        <label for={id('text')}>Text contains</label>
        <input
          id={id('text')}
          name="text"
          type="text"
          value={filter.text}
          maxLength={FILTER_LIMITS.text}
          placeholder="subject or body"
        />
      </div>
      <div>
        <label for={id('from')}>From</label>
        <input
          id={id('from')}
          name="from"
          type="text"
          value={filter.from}
          maxLength={FILTER_LIMITS.from}
          placeholder="a@b.example or @b.example"
        />
      </div>
      {props.recipient && (
        <div>
          <label for={id('to')}>To contains</label>
          <input
            id={id('to')}
            name="to"
            type="text"
            value={filter.to}
            maxLength={FILTER_LIMITS.to}
            placeholder="inbox address or part of it"
          />
        </div>
      )}
      <div>
        <label for={id('since')}>Received since (UTC)</label>
        <input
          id={id('since')}
          name="since"
          type="text"
          value={filter.since}
          maxLength={FILTER_LIMITS.since}
          placeholder="2026-11-25 14:30"
        />
      </div>
      <div>
        <label for={id('until')}>Received until (UTC)</label>
        <input
          id={id('until')}
          name="until"
          type="text"
          value={filter.until}
          maxLength={FILTER_LIMITS.until}
          placeholder="2026-11-25 18:00:59"
        />
      </div>
      <div class="filter-check">
        <input
          id={id('attachment')}
          name="attachment"
          type="checkbox"
          value="yes"
          checked={filter.attachment === 'yes'}
        />
        <label for={id('attachment')}>Has attachment</label>
      </div>
    </>
  )
}

/**
 * The search line with the operators beside it, and the filter form folded under it (open
 * when one of its fields is in use). One form, so the URL carries every value.
 */
export function SearchLineForm(props: {
  action: string
  filter: InboxFilter
  label: string
  recipient?: boolean
  idPrefix?: string
}) {
  const { filter } = props
  const id = (name: string) => `${props.idPrefix ?? 'filter'}-${name}`
  return (
    <form method="get" action={props.action} class="search-line" aria-label={props.label}>
      <div class="search-row">
        <label for={id('q')} class="visually-hidden">
          {props.label}
        </label>
        <input
          id={id('q')}
          name="q"
          type="search"
          value={filter.q}
          maxLength={MAX_LINE}
          placeholder='from:shop.example is:unread "reset password" -has:attachment'
          class="mono"
        />
        <button type="submit" class="secondary">
          {props.recipient ? 'Search all inboxes' : 'Search'}
        </button>
        {isFiltered(filter) && <a href={filterHref(props.action, { ...emptyFilter, size: filter.size })}>Clear</a>}
      </div>
      {/* biome-ignore format: its fill puts a line's closing {' '} past the width */}
      <p class="muted operators" id={id('operators')}>
        <code>from:</code> <code>to:</code> <code>subject:</code> <code>has:attachment</code>{' '}
        <code>is:unread</code> <code>is:read</code> <code>before:</code>{' '}
        <code>after:</code> <code>larger:</code> <code>smaller:</code> (<code>100k</code>, <code>2m</code>),{' '}
        <code>"a phrase"</code>, <code>-</code> negates; other words search the subject and text.
      </p>
      {filter.size && <input type="hidden" name="size" value={filter.size} />}
      <details class="more-filters" open={usesFormFields(filter)}>
        <summary>Filter form</summary>
        <div class="filters">
          <FilterFields idPrefix={props.idPrefix ?? 'filter'} filter={filter} recipient={props.recipient} />
          <div class="filter-actions">
            <button type="submit" class="secondary">
              Filter
            </button>
          </div>
        </div>
      </details>
    </form>
  )
}

export function SearchPage(props: {
  org: Membership
  filter: InboxFilter
  results: { data: MessageSummary[]; next_cursor: string | null } | null
  error?: string
}) {
  const { org, filter } = props
  const here = PATHS.search.link(org.organizationId)
  return (
    <section class="card">
      <h2>Search all inboxes</h2>
      <SearchLineForm action={here} filter={filter} label="Search all inboxes" recipient idPrefix="search" />
      {props.error && <p class="error">{props.error}</p>}
      <p class="muted" id="search-bounds">
        Looks through the organisation's newest {SEARCH_WINDOW.toLocaleString('en')} messages in every active inbox;
        with text or a subject, its newest {TEXT_SEARCH_WINDOW.toLocaleString('en')}. Text contains looks at the subject
        and the start of the text (the first {TEXT_SEARCH_CHARS.toLocaleString('en')} characters), ignoring case.
      </p>
      {props.results !== null &&
        (props.results.data.length === 0 ? (
          <p id="no-results">No messages match.</p>
        ) : (
          <Table columns={['To', 'From', 'Subject', 'Received']}>
            {props.results.data.map((m) => (
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
      {props.results?.next_cursor && (
        <p>
          <a href={filterHref(here, filter, props.results.next_cursor)} id="older-matches">
            Older matches
          </a>
        </p>
      )}
      {filter.cursor && (
        <p>
          <a href={filterHref(here, filter)}>Newest matches</a>
        </p>
      )}
    </section>
  )
}
