/** @jsxImportSource preact */
/**
 * The mail viewer's lists: an organisation's inboxes, and one inbox's messages (newest
 * first, refreshed by console.js when the page's event stream reports new mail). Empty
 * states say exactly what to do next, with the SMTP address of this server.
 */
import type { Membership } from '../../core/organizations/organizations.ts'
import type { RefusedDelivery } from '../../core/inbound/refused-deliveries.ts'
import type { Inbox, Usage } from '../../core/common/models.ts'
import type { InboxStats } from '../../core/inboxes/inbox-stats.ts'
import { emptyFilter, filterHref, type InboxFilter, isFiltered } from '../inbox-filter.ts'
import { COUNT_LIMIT, type ConsolePage, DEFAULT_PAGE_SIZE, PAGE_SIZES } from '../../core/messages/console-listing.ts'
import { TEXT_SEARCH_WINDOW } from '../../core/messages/search-filters.ts'
import { UsageCards } from './overview.tsx'
import { SearchLineForm } from './search.tsx'
import { PATHS, withQuery } from '../paths.ts'
import { PostForm, Table, Time } from './shell.tsx'

/** The swaks line a newcomer can paste to see mail arrive. */
const swaksCommand = (smtpAddress: string, to: string) =>
  `swaks --server ${smtpAddress} --to ${to} --from app@example.com ` +
  `--header "Subject: Hello from swaks" --body "It works."`

/** The same with curl, which most machines have (it speaks SMTP). */
const curlCommand = (smtpAddress: string, to: string) =>
  `printf 'Subject: Hello from curl\\r\\n\\r\\nIt works.\\r\\n' | curl -s ` +
  `smtp://${smtpAddress} --mail-from app@example.com --mail-rcpt ${to} -T -`

export function InboxesPage(props: {
  org: Membership
  listing: { data: Inbox[]; next_cursor: string | null }
  stats: Map<string, InboxStats>
  usage: Usage
  receivingDomain: string
  /** The address filter as given ('' for none). */
  address: string
  error?: string
  filterError?: string
  prefix?: string
}) {
  const { org } = props
  const here = PATHS.inboxes.link(org.organizationId)
  return (
    <>
      <UsageCards usage={props.usage} />
      <section class="card">
        <h2>Search all inboxes</h2>
        <SearchLineForm
          action={PATHS.search.link(org.organizationId)}
          filter={emptyFilter}
          label="Search all inboxes"
          recipient
          idPrefix="search"
        />
      </section>
      <section class="card">
        <h2>New inbox</h2>
        {props.error && <p class="error">{props.error}</p>}
        <PostForm action={PATHS.inboxes.link(org.organizationId)}>
          <label for="prefix">Address (optional)</label>
          <div class="copy-row">
            <input
              id="prefix"
              name="prefix"
              type="text"
              maxLength={64}
              placeholder="random"
              class="mono"
              value={props.prefix}
            />
            <span class="muted mono">@{props.receivingDomain}</span>
          </div>
          <p class="muted">
            Leave it empty for a random address. A chosen one is the whole address and unique on this server until its
            inbox is deleted.
          </p>
          <div class="form-actions">
            <button type="submit">Create inbox</button>
          </div>
        </PostForm>
      </section>
      <section class="card">
        <h2>Inboxes</h2>
        <form method="get" action={here} class="search-row address-filter" aria-label="Filter inboxes">
          <label for="address-filter" class="visually-hidden">
            Address contains
          </label>
          <input
            id="address-filter"
            name="address"
            type="search"
            value={props.address}
            maxLength={ADDRESS_FILTER_LIMIT}
            placeholder="address contains…"
            class="mono"
          />
          <button type="submit" class="secondary">
            Filter
          </button>
          {props.address && <a href={here}>All inboxes</a>}
        </form>
        {props.filterError && (
          <p class="error" id="address-filter-error">
            {props.filterError}
          </p>
        )}
        <p class="muted" id="live-status" role="status">
          Counts move as mail arrives.
        </p>
        {/*
          Live: console.js watches the listed inboxes (org:id each) through the shared stream and re-reads the list
          when one gets mail.
        */}
        <div
          id="inbox-list"
          data-live-events={props.listing.data.length > 0 ? PATHS.live.link() : undefined}
          data-live-org={org.organizationId}
          data-live-watch={
            props.listing.data.length > 0 ? props.listing.data.map((inbox) => inbox.id).join(' ') : undefined
          }
        >
          <InboxTable {...props} />
        </div>
      </section>
    </>
  )
}

/** The inside of the Inboxes page's `#inbox-list`; also served alone to its live refresh. */
export function InboxTable(props: {
  org: Membership
  listing: { data: Inbox[]; next_cursor: string | null }
  stats: Map<string, InboxStats>
  address: string
}) {
  const { org } = props
  const inboxes = props.listing.data
  return (
    <>
      {inboxes.length === 0 ? (
        props.address ? (
          <p id="no-inboxes">No inbox address contains “{props.address}”.</p>
        ) : (
          <p id="no-inboxes">
            No inboxes yet. Create one above: its page shows the command that sends it a message, and the message
            appears there as it arrives.
          </p>
        )
      ) : (
        // One form for the list (one CSRF token, not one per row), to keep 100 rows under the page budget.
        <PostForm action={PATHS.inboxesDelete.link(org.organizationId)} confirm="Delete this inbox and all its mail?">
          <Table columns={['Address', 'Messages', 'Unread', 'Last received', 'Created', '']}>
            {inboxes.map((inbox) => {
              const stats = props.stats.get(inbox.id)
              return (
                <tr data-inbox={inbox.address}>
                  <td>
                    <a href={PATHS.inbox.link(org.organizationId, inbox.id)} class="mono">
                      {inbox.address}
                    </a>
                  </td>
                  <td class="count">{(stats?.messages ?? 0).toLocaleString('en')}</td>
                  <td class={stats?.unread ? 'unread has-unread' : 'unread'}>
                    {(stats?.unread ?? 0).toLocaleString('en')}
                  </td>
                  <td>
                    <Time at={stats?.lastReceivedAt} />
                  </td>
                  <td>
                    <Time at={inbox.created_at} />
                  </td>
                  <td>
                    <button
                      type="submit"
                      name="inbox"
                      value={inbox.id}
                      class="danger"
                      aria-label={`Delete ${inbox.address}`}
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              )
            })}
          </Table>
        </PostForm>
      )}
      {props.listing.next_cursor && (
        <p>
          <a
            href={withQuery(PATHS.inboxes.link(org.organizationId), {
              address: props.address || undefined,
              cursor: props.listing.next_cursor,
            })}
            id="older-inboxes"
          >
            Older inboxes
          </a>
        </p>
      )}
    </>
  )
}

/** The longest address filter taken (an address is at most 320 characters). */
export const ADDRESS_FILTER_LIMIT = 320

export function InboxPage(props: {
  org: Membership
  inbox: Inbox
  listing: ConsolePage
  /** Unread messages in the whole inbox (the page shows its own). */
  unread: number
  filter: InboxFilter
  error?: string
  smtpAddress: string
  refused: RefusedDelivery[]
}) {
  const { org, inbox, filter } = props
  const here = PATHS.inbox.link(org.organizationId, inbox.id)
  // Only the newest page changes as mail arrives; an older page says so instead of "live".
  const newestPage = filter.cursor === '' && filter.before === ''
  return (
    <>
      <section class="card inbox-head">
        <div class="head-row">
          <h2 class="page-title">
            {inbox.address}{' '}
            <span class="badge" id="inbox-unread" data-unread={props.unread}>
              {props.unread} unread
            </span>
          </h2>
          {/* The address in a field of its own for the copy button (copied as the field's value). */}
          <label for="inbox-address" class="visually-hidden">
            Address
          </label>
          <input id="inbox-address" type="text" readonly value={inbox.address} class="visually-hidden" tabIndex={-1} />
          <button
            type="button"
            class="button secondary small"
            data-copy="inbox-address"
            aria-label={`Copy ${inbox.address}`}
          >
            Copy
          </button>
          {/* Shown by console.js where the browser has notifications; off until asked for. */}
          {newestPage && (
            <button type="button" class="button secondary small" id="notify-toggle" hidden>
              Notify me of new mail
            </button>
          )}
          {newestPage ? (
            <p class="muted" id="live-status" role="status">
              New mail appears here without reloading.
            </p>
          ) : (
            <p class="muted" id="live-status">
              An older page: new mail shows on <a href={filterHref(here, filter)}>the newest page</a>.
            </p>
          )}
        </div>
      </section>
      <section class="card messages-card">
        <h2 class="visually-hidden">Messages</h2>
        <SearchLineForm action={here} filter={filter} label="Search this inbox" />
        {props.error && (
          <p class="error" id="search-error">
            {props.error}
          </p>
        )}
        {(filter.text || /(^|\s)-?"|(^|\s)-?[^\s:"]+(\s|$)/.test(filter.q)) && (
          <p class="muted" id="text-bounds">
            Text is looked for in this inbox's newest {TEXT_SEARCH_WINDOW.toLocaleString('en')} messages.
          </p>
        )}
        <div
          id="message-list"
          data-live-events={newestPage ? PATHS.inboxEvents.link(org.organizationId, inbox.id) : undefined}
          data-live-watch={newestPage ? `${org.organizationId}:${inbox.id}` : undefined}
        >
          <MessageList {...props} />
        </div>
      </section>
      {props.refused.length > 0 && (
        <section class="card" id="refused-deliveries">
          <h2>Refused deliveries</h2>
          <p class="muted">
            Mail for this address that the server refused at RCPT TO, newest first (the last 10 since the server
            started).
          </p>
          <Table columns={['Time', 'Sender', 'Reply']}>
            {props.refused.map((r) => (
              <tr>
                <td>
                  <Time at={new Date(r.at).toISOString()} />
                </td>
                <td class="mono">{r.sender || '<> (a bounce)'}</td>
                <td class="mono">{r.reply}</td>
              </tr>
            ))}
          </Table>
        </section>
      )}
      <div class="actions">
        <PostForm
          action={PATHS.inboxEmpty.link(org.organizationId, inbox.id)}
          confirm={`Delete every message of ${inbox.address}? The inbox stays.`}
        >
          <button type="submit" class="danger">
            Empty this inbox
          </button>
        </PostForm>
        <PostForm
          action={PATHS.inboxDelete.link(org.organizationId, inbox.id)}
          confirm={`Delete ${inbox.address} and all its mail?`}
        >
          <button type="submit" class="danger">
            Delete this inbox
          </button>
        </PostForm>
      </div>
    </>
  )
}

/** "1–50 of 300", Newer and Older, and the page sizes; above and below the list. */
function Pager(props: { here: string; filter: InboxFilter; listing: ConsolePage; where: 'top' | 'bottom' }) {
  const { here, filter, listing } = props
  const { rows, total, first } = listing
  const shownTotal = total > COUNT_LIMIT ? `more than ${COUNT_LIMIT.toLocaleString('en')}` : total.toLocaleString('en')
  const range =
    first === null
      ? `${rows.length} of ${shownTotal}`
      : `${first.toLocaleString('en')}–${(first + rows.length - 1).toLocaleString('en')} of ${shownTotal}`
  const size = Number(filter.size || DEFAULT_PAGE_SIZE)
  // Newer and Older keep the filters; a new page size starts again from the newest.
  const suffix = props.where === 'top' ? '' : '-bottom'
  return (
    // Not a <nav> landmark: two per list would crowd the page's landmarks; the links say what they do.
    <div class="pager">
      <span class="range" id={`range${suffix}`}>
        {range}
      </span>
      {listing.newer ? (
        <a
          href={filterHref(here, filter, undefined, listing.newer)}
          id={`newer-messages${suffix}`}
          rel="prev"
          aria-label={suffix ? undefined : 'Newer messages'}
        >
          ← Newer
        </a>
      ) : (
        <span class="muted">← Newer</span>
      )}
      {listing.older ? (
        <a
          href={filterHref(here, filter, listing.older)}
          id={`older-messages${suffix}`}
          rel="next"
          aria-label={suffix ? undefined : 'Older messages'}
        >
          Older →
        </a>
      ) : (
        <span class="muted">Older →</span>
      )}
      {props.where === 'top' && listing.newer && (
        <a href={filterHref(here, filter)} id="newest-messages">
          Newest messages
        </a>
      )}
      {props.where === 'top' && (
        <span class="page-sizes">
          Per page:{' '}
          {PAGE_SIZES.map((n) =>
            n === size ? (
              <strong aria-current="true">{n}</strong>
            ) : (
              <a
                href={filterHref(here, { ...filter, size: n === DEFAULT_PAGE_SIZE ? '' : String(n) })}
                aria-label={`${n} per page`}
              >
                {n}
              </a>
            ),
          )}
        </span>
      )}
    </div>
  )
}

/**
 * The inside of an inbox page's `#message-list`: its rows, or the empty state, and the
 * paging links. Also served alone to the page's live refresh (routes/inboxes.tsx), which
 * swaps it in without reading the rest of the page.
 */
export function MessageList(props: {
  org: Membership
  inbox: Inbox
  listing: ConsolePage
  filter: InboxFilter
  smtpAddress: string
}) {
  const { org, inbox, filter, listing } = props
  const here = PATHS.inbox.link(org.organizationId, inbox.id)
  const filtered = isFiltered(filter) || filter.cursor !== '' || filter.before !== ''
  // The view to come back to after a post: this list's query string (the route keeps it to this inbox's path).
  const back = filterHref('', filter, filter.cursor || undefined, filter.before || undefined)
  const unread = listing.rows.filter((m) => !m.read).length
  // A page of up to 50 rows shows a preview beside each subject (about what one line holds)
  // and a Delete per row; a page of 100 leaves both out (the bulk Delete remains) to stay
  // under the 50 KB page budget.
  const full = listing.rows.length <= 50
  return (
    <>
      {listing.rows.length === 0 ? (
        filtered ? (
          <p id="no-matches">No messages match these filters.</p>
        ) : (
          <div id="no-messages">
            <p>Waiting for mail. Send this inbox a message, for example with curl:</p>
            <pre>{curlCommand(props.smtpAddress, inbox.address)}</pre>
            <p>or with swaks:</p>
            <pre>{swaksCommand(props.smtpAddress, inbox.address)}</pre>
            <p class="muted">It shows up here as soon as the server has stored it.</p>
          </div>
        )
      ) : (
        // One form for the whole list (one CSRF token, not one per row): each row's button names
        // its message; the bulk buttons send the ticked ones. `back` returns to this very view.
        <PostForm
          action={PATHS.inboxBulk.link(org.organizationId, inbox.id)}
          confirm="Delete this message?"
          id="list-form"
        >
          <input type="hidden" name="back" value={back} />
          <div class="list-tools">
            <Pager here={here} filter={filter} listing={listing} where="top" />
            <fieldset class="bulk">
              <legend class="visually-hidden">With the selected messages</legend>
              <input type="checkbox" id="select-all" />
              <label for="select-all" class="all">
                All on this page
              </label>
              <button type="submit" name="action" value="read" class="secondary" data-confirm="">
                Mark read
              </button>
              <button type="submit" name="action" value="unread" class="secondary" data-confirm="">
                Mark unread
              </button>
              <button
                type="submit"
                name="action"
                value="delete"
                class="danger"
                data-confirm="Delete the selected messages?"
              >
                Delete selected
              </button>
              <span class="muted" id="unread-on-page">
                {unread} unread on this page
              </span>
            </fieldset>
          </div>
          <Table columns={['Select', 'From', 'Subject', 'Received', 'Size', full && '']} class="messages">
            {listing.rows.map((m, i) => {
              const subject = m.subject || '(no subject)'
              // Bytes count here (100 rows stay under the page budget): cells are styled by
              // position, and a control is named by the subject link it points at.
              return (
                <tr class={m.read ? undefined : 'u'}>
                  <td>
                    <input type="checkbox" name="selected" value={m.id} aria-labelledby={`s${i}`} />
                  </td>
                  <td>{m.from.name || m.from.address}</td>
                  <td>
                    {!m.read && <span class="visually-hidden">Unread: </span>}
                    {/* Relative (../messages/id from .../inboxes/id): the same page, 45 bytes a row lighter. */}
                    <a id={`s${i}`} href={`../messages/${encodeURIComponent(m.id)}`}>
                      {subject}
                    </a>
                    {m.has_attachment && (
                      <svg
                        class="att"
                        role="img"
                        aria-label="has an attachment"
                        viewBox="0 0 16 16"
                        width="14"
                        height="14"
                      >
                        <path
                          d="M11 4.5v6.5a3 3 0 0 1-6 0V4a2 2 0 0 1 4 0v6.5a1 1 0 0 1-2 0V5"
                          fill="none"
                          stroke="currentColor"
                          stroke-width="1.4"
                        />
                      </svg>
                    )}
                    {full && <span class="muted"> {m.preview.slice(0, 100)}</span>}
                  </td>
                  <td>
                    <Time at={m.received_at} />
                  </td>
                  <td>{formatBytes(m.size_bytes)}</td>
                  {full && (
                    <td>
                      <button
                        type="submit"
                        name="message"
                        value={m.id}
                        class="danger small"
                        aria-label={`Delete ${subject}`}
                      >
                        Delete
                      </button>
                    </td>
                  )}
                </tr>
              )
            })}
          </Table>
          <Pager here={here} filter={filter} listing={listing} where="bottom" />
        </PostForm>
      )}
    </>
  )
}

export const formatBytes = (n: number) =>
  n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`
