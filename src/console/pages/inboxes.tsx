/**
 * The mail viewer's lists: an organisation's inboxes, and one inbox's messages (newest
 * first, refreshed by console.js when the page's event stream reports new mail). Empty
 * states say exactly what to do next, with the SMTP address of this server.
 */
import type { Membership } from '../../core/console/organizations.ts'
import type { Inbox, MessageSummary, Usage } from '../../core/models.ts'
import { UsageCards } from './overview.tsx'
import { CopyField, orgPath, PostForm, Table, Time } from './shell.tsx'

/** The swaks line a newcomer can paste to see mail arrive. */
export const swaksCommand = (smtpAddress: string, to: string) => `swaks --server ${smtpAddress} --to ${to} --from app@example.com --header "Subject: Hello from swaks" --body "It works."`

export const inboxPath = (organizationId: string, inboxId: string) => orgPath(organizationId, `/inboxes/${encodeURIComponent(inboxId)}`)

export function InboxesPage(props: { org: Membership; inboxes: Inbox[]; usage: Usage; receivingDomain: string; error?: string }) {
  const { org } = props
  return (
    <>
      <UsageCards usage={props.usage} />
      <section class="card">
        <h2>New inbox</h2>
        {props.error && <p class="error">{props.error}</p>}
        <PostForm action={orgPath(org.organizationId, '/inboxes')}>
          <label for="prefix">Address (optional)</label>
          <div class="copy-row">
            <input id="prefix" name="prefix" type="text" maxLength={64} placeholder="random" class="mono" />
            <span class="muted mono">@{props.receivingDomain}</span>
          </div>
          <p class="muted">Leave it empty for a random address.</p>
          <div class="form-actions">
            <button type="submit">Create inbox</button>
          </div>
        </PostForm>
      </section>
      <section class="card">
        <h2>Inboxes</h2>
        {props.inboxes.length === 0 ? (
          <p id="no-inboxes">No inboxes yet. Create one above: its page shows the command that sends it a message, and the message appears there as it arrives.</p>
        ) : (
          <Table columns={['Address', 'Created', '']}>
            {props.inboxes.map((inbox) => (
              <tr>
                <td>
                  <a href={inboxPath(org.organizationId, inbox.id)} class="mono">
                    {inbox.address}
                  </a>
                </td>
                <td>
                  <Time at={inbox.created_at} />
                </td>
                <td>
                  <PostForm action={`${inboxPath(org.organizationId, inbox.id)}/delete`} class="inline" confirm={`Delete ${inbox.address} and all its mail?`}>
                    <button type="submit" class="danger">
                      Delete
                    </button>
                  </PostForm>
                </td>
              </tr>
            ))}
          </Table>
        )}
      </section>
    </>
  )
}

export function InboxPage(props: { org: Membership; inbox: Inbox; messages: MessageSummary[]; more: boolean; smtpAddress: string }) {
  const { org, inbox } = props
  const here = inboxPath(org.organizationId, inbox.id)
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
        <div id="message-list" data-live-events={`${here}/events`} data-live-watch={`${org.organizationId}:${inbox.id}`}>
          {props.messages.length === 0 ? (
            <div id="no-messages">
              <p>Waiting for mail. Send this inbox a message, for example with swaks:</p>
              <pre>{swaksCommand(props.smtpAddress, inbox.address)}</pre>
              <p class="muted">It shows up here as soon as the server has stored it.</p>
            </div>
          ) : (
            <Table columns={['From', 'Subject', 'Received', 'Size']}>
              {props.messages.map((m) => (
                <tr>
                  <td>{m.from.name ? `${m.from.name} <${m.from.address}>` : m.from.address}</td>
                  <td>
                    <a href={orgPath(org.organizationId, `/messages/${encodeURIComponent(m.id)}`)}>{m.subject || '(no subject)'}</a>
                    <div class="muted">{m.preview}</div>
                  </td>
                  <td>
                    <Time at={m.received_at} />
                  </td>
                  <td>{formatBytes(m.size_bytes)}</td>
                </tr>
              ))}
            </Table>
          )}
          {props.more && <p class="muted">Showing the newest {props.messages.length}; older messages are kept and reachable through the API.</p>}
        </div>
      </section>
      <PostForm action={`${here}/delete`} confirm={`Delete ${inbox.address} and all its mail?`}>
        <button type="submit" class="danger">
          Delete this inbox
        </button>
      </PostForm>
    </>
  )
}

export const formatBytes = (n: number) => (n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`)
