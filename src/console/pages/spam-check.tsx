/** @jsxImportSource preact */
/** A message's spam check (checks/spam-check.ts) as its own GET page; a filter that is down is one clear line. */
import type { Membership } from '../../core/organizations/organizations.ts'
import type { Message } from '../../core/common/models.ts'
import type { SpamVerdict } from '../checks/spam-check.ts'
import { PATHS } from '../paths.ts'
import { Table } from './shell.tsx'

const points = (n: number) => n.toFixed(2).replace(/\.?0+$/, '') || '0'

export function SpamCheckPage({
  org,
  message,
  filterName,
  verdict,
}: {
  org: Membership
  message: Message
  filterName: string
  verdict: SpamVerdict
}) {
  return (
    <>
      <nav class="message-nav" aria-label="Messages">
        <a href={PATHS.message.link(org.organizationId, message.id)}>← {message.subject || '(no subject)'}</a>
      </nav>
      <section class="card" id="spam-check">
        <h2 class="page-title">Spam check</h2>
        {!verdict.available ? (
          <p class="error" id="spam-unavailable" role="alert">
            The spam filter ({filterName}) could not check this message: {verdict.reason}. Reload to try again.
          </p>
        ) : (
          <>
            <p class={verdict.spam ? 'error' : 'notice'} id="spam-verdict">
              <strong>{verdict.spam ? 'Spam' : 'Not spam'}</strong>: a score of{' '}
              <span id="spam-score">{points(verdict.score)}</span> against the filter's threshold of{' '}
              {points(verdict.required)}; {filterName} would{' '}
              {verdict.action === 'no action' ? 'deliver it as it is' : `take the action "${verdict.action}"`}.
              {verdict.message && ` (${verdict.message})`}
            </p>
            <p class="muted">
              From the filter this server's operator runs, with its own rules and settings; the message was sent to it
              as received.
            </p>
            <h2>Rules that fired ({verdict.rules.length})</h2>
            {verdict.rules.length === 0 ? (
              <p class="muted">None.</p>
            ) : (
              <Table columns={['Rule', 'Score', 'What it means']} class="spam-rules">
                {verdict.rules.map((rule) => (
                  <tr data-rule={rule.name}>
                    <td class="mono">{rule.name}</td>
                    <td>{points(rule.score)}</td>
                    <td>
                      {rule.description}
                      {rule.options.length > 0 && <span class="muted"> ({rule.options.join(', ')})</span>}
                    </td>
                  </tr>
                ))}
              </Table>
            )}
          </>
        )}
      </section>
    </>
  )
}
