/** @jsxImportSource preact */
/**
 * The mail viewer's lists: an organisation's inboxes, and one inbox's messages (newest
 * first, refreshed by console.js when the page's event stream reports new mail). Empty
 * states say exactly what to do next, with the SMTP address of this server.
 */
import type { Membership } from '../../core/organizations/organizations.ts'
import type { RefusedDelivery } from '../../core/inbound/refused-deliveries.ts'
import type { Inbox, MessageSummary, Usage } from '../../core/models.ts'
import type { InboxStats } from '../../core/inboxes/inbox-stats.ts'
import { emptyFilter, filterHref, type InboxFilter, isFiltered } from '../inbox-filter.ts'
import { TEXT_SEARCH_WINDOW } from '../../core/messages/search-filters.ts'
import { UsageCards } from './overview.tsx'
import { FilterFields, SearchForm } from './search.tsx'
import { PATHS, withQuery } from '../paths.ts'
import { CopyField, PostForm, Table, Time } from './shell.tsx'

/** The swaks line a newcomer can paste to see mail arrive. */
export const swaksCommand = (smtpAddress: string, to: string) => `swaks --server ${smtpAddress} --to ${to} --from app@example.com --header "Subject: Hello from swaks" --body "It works."`

/** The same with curl, which most machines have (it speaks SMTP). */
export const curlCommand = (smtpAddress: string, to: string) =>
  `printf 'Subject: Hello from curl\\r\\n\\r\\nIt works.\\r\\n' | curl -s smtp://${smtpAddress} --mail-from app@example.com --mail-rcpt ${to} -T -`

export function InboxesPage(props: { org: Membership; listing: { data: Inbox[]; next_cursor: string | null }; stats: Map<string, InboxStats>; usage: Usage; receivingDomain: string; error?: string }) {
  const { org } = props
  const inboxes = props.listing.data
  return (
    <>
      <UsageCards usage={props.usage} />
      <section class="card">
        <h2>Search all inboxes</h2>
        <SearchForm org={org} filter={emptyFilter} />
      </section>
      <section class="card">
        <h2>New inbox</h2>
        {props.error && <p class="error">{props.error}</p>}
        <PostForm action={PATHS.inboxes.link(org.organizationId)}>
          <label for="prefix">Address (optional)</label>
          <div class="copy-row">
            <input id="prefix" name="prefix" type="text" maxLength={64} placeholder="random" class="mono" />
            <span class="muted mono">@{props.receivingDomain}</span>
          </div>
          <p class="muted">Leave it empty for a random address. A chosen one is the whole address and unique on this server until its inbox is deleted.</p>
          <div class="form-actions">
            <button type="submit">Create inbox</button>
          </div>
        </PostForm>
      </section>
      <section class="card">
        <h2>Inboxes</h2>
        {inboxes.length === 0 ? (
          <p id="no-inboxes">No inboxes yet. Create one above: its page shows the command that sends it a message, and the message appears there as it arrives.</p>
        ) : (
          // One form for the list (one CSRF token, not one per row), to keep 100 rows under the page budget.
          <PostForm action={PATHS.inboxesDelete.link(org.organizationId)} confirm="Delete this inbox and all its mail?">
            <Table columns={['Address', 'Messages', 'Last received', 'Created', '']}>
              {inboxes.map((inbox) => (
                <tr data-inbox={inbox.address}>
                  <td>
                    <a href={PATHS.inbox.link(org.organizationId, inbox.id)} class="mono">
                      {inbox.address}
                    </a>
                  </td>
                  <td class="count">{(props.stats.get(inbox.id)?.messages ?? 0).toLocaleString('en')}</td>
                  <td>
                    <Time at={props.stats.get(inbox.id)?.lastReceivedAt} />
                  </td>
                  <td>
                    <Time at={inbox.created_at} />
                  </td>
                  <td>
                    <button type="submit" name="inbox" value={inbox.id} class="danger" aria-label={`Delete ${inbox.address}`}>
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </Table>
          </PostForm>
        )}
        {props.listing.next_cursor && (
          <p>
            <a href={withQuery(PATHS.inboxes.link(org.organizationId), { cursor: props.listing.next_cursor })} id="older-inboxes">
              Older inboxes
            </a>
          </p>
        )}
      </section>
    </>
  )
}

export function InboxPage(props: {
  org: Membership
  inbox: Inbox
  messages: MessageSummary[]
  nextCursor: string | null
  filter: InboxFilter
  error?: string
  smtpAddress: string
  refused: RefusedDelivery[]
}) {
  const { org, inbox, filter } = props
  const here = PATHS.inbox.link(org.organizationId, inbox.id)
  return (
    <>
      <section class="card">
        <h2 class="page-title">{inbox.address}</h2>
        <CopyField id="inbox-address" label="Address" value={inbox.address} />
        <p class="muted" id="live-status" role="status">
          New mail appears here without reloading.
        </p>
      </section>
      <section class="card">
        <h2>Messages</h2>
        <form method="get" action={here} class="filters" aria-label="Filter messages">
          <FilterFields idPrefix="filter" filter={filter} />
          <div class="filter-actions">
            <button type="submit" class="secondary">
              Filter
            </button>
            {isFiltered(filter) && <a href={here}>Clear</a>}
          </div>
        </form>
        {props.error && <p class="error">{props.error}</p>}
        {filter.text && (
          <p class="muted" id="text-bounds">
            Text is looked for in this inbox's newest {TEXT_SEARCH_WINDOW.toLocaleString('en')} messages.
          </p>
        )}
        <div id="message-list" data-live-events={PATHS.inboxEvents.link(org.organizationId, inbox.id)} data-live-watch={`${org.organizationId}:${inbox.id}`}>
          <MessageList {...props} />
        </div>
      </section>
      {props.refused.length > 0 && (
        <section class="card" id="refused-deliveries">
          <h2>Refused deliveries</h2>
          <p class="muted">Mail for this address that the server refused at RCPT TO, newest first (the last 10 since the server started).</p>
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
        <PostForm action={PATHS.inboxEmpty.link(org.organizationId, inbox.id)} confirm={`Delete every message of ${inbox.address}? The inbox stays.`}>
          <button type="submit" class="danger">
            Empty this inbox
          </button>
        </PostForm>
        <PostForm action={PATHS.inboxDelete.link(org.organizationId, inbox.id)} confirm={`Delete ${inbox.address} and all its mail?`}>
          <button type="submit" class="danger">
            Delete this inbox
          </button>
        </PostForm>
      </div>
    </>
  )
}

/**
 * The inside of an inbox page's `#message-list`: its rows, or the empty state, and the
 * paging links. Also served alone to the page's live refresh (routes/inboxes.tsx), which
 * swaps it in without reading the rest of the page.
 */
export function MessageList(props: { org: Membership; inbox: Inbox; messages: MessageSummary[]; nextCursor: string | null; filter: InboxFilter; smtpAddress: string }) {
  const { org, inbox, filter } = props
  const here = PATHS.inbox.link(org.organizationId, inbox.id)
  const filtered = isFiltered(filter) || filter.cursor !== ''
  return (
    <>
      {props.messages.length === 0 ? (
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
        // One form for the whole list (one CSRF token, not one per row): each row's button names its message.
        <PostForm action={filterHref(PATHS.inboxDeleteMessage.link(org.organizationId, inbox.id), filter, filter.cursor || undefined)} confirm="Delete this message?">
          <Table columns={['From', 'Subject', 'Received', 'Size', '']}>
            {props.messages.map((m) => (
              <tr>
                <td>{m.from.name ? `${m.from.name} <${m.from.address}>` : m.from.address}</td>
                <td>
                  {/* Relative (../messages/id from .../inboxes/id): the same page, 45 bytes a row lighter. */}
                  <a href={`../messages/${encodeURIComponent(m.id)}`}>{m.subject || '(no subject)'}</a>
                  <div class="muted">{m.preview}</div>
                </td>
                <td>
                  <Time at={m.received_at} />
                </td>
                <td>{formatBytes(m.size_bytes)}</td>
                <td>
                  <button type="submit" name="message" value={m.id} class="danger" aria-label={`Delete ${m.subject || '(no subject)'}`}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </Table>
        </PostForm>
      )}
      {props.nextCursor && (
        <p>
          <a href={filterHref(here, filter, props.nextCursor)} id="older-messages">
            Older messages
          </a>
        </p>
      )}
      {filter.cursor && (
        <p>
          <a href={filterHref(here, filter)}>Newest messages</a>
        </p>
      )}
    </>
  )
}

export const formatBytes = (n: number) => (n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`)
