/** @jsxImportSource preact */
/**
 * A kept link check: every link and image of the message with what answered, each redirect
 * on the way, and why a URL was not requested. A GET page of its own (see
 * core/messages/link-checks.ts); "Check again" posts a new check.
 */
import type { Message } from '../../core/common/models.ts'
import type { Membership } from '../../core/organizations/organizations.ts'
import type { LinkCheckResult } from '../../core/messages/link-checks.ts'
import { MAX_HOPS } from '../../core/messages/link-check.ts'
import { PATHS } from '../paths.ts'
import { PostForm, Table, Time } from './shell.tsx'

const good = (status: number | null) => status !== null && status >= 200 && status < 400

export function LinkCheckPage(props: {
  org: Membership
  message: Message
  check: LinkCheckResult
  canRecheck: boolean
  allowList: string
}) {
  const { org, message, check } = props
  const failed = check.results.filter((r) => !good(r.status)).length
  const answers = failed === 0 ? 'all answered' : `${failed} without a good answer`
  return (
    <section class="card" id="link-check">
      <h2 class="page-title">Link check</h2>
      <p>
        <a href={PATHS.message.link(org.organizationId, message.id)} id="back-to-message">
          ← {message.subject || '(no subject)'}
        </a>
      </p>
      <p id="link-check-summary">
        Checked <Time at={check.createdAt} />: {check.results.length} URL{check.results.length === 1 ? '' : 's'},{' '}
        {answers}. Redirects are followed up to {MAX_HOPS} times, each hop checked before it is requested.
        {check.skipped > 0 && ` ${check.skipped} more were not checked.`}
      </p>
      <p class="muted">
        {props.allowList
          ? `Besides public addresses, this server may reach: ` +
            `${props.allowList.split(',').join(', ')} (CONSOLE_LINK_CHECK_ALLOW).`
          : 'Only public addresses are requested; CONSOLE_LINK_CHECK_ALLOW names the hosts, ' +
            'ranges and ports (localhost:3000, for example) the check may reach besides.'}
      </p>
      {check.results.length === 0 ? (
        <p id="no-links">The message has no http(s) links or images.</p>
      ) : (
        <Table columns={['', 'URL', 'Result']} class="link-results">
          {check.results.map((r) => (
            <tr class={good(r.status) ? 'ok' : 'bad'}>
              <td>{r.kind === 'image' ? 'Image' : 'Link'}</td>
              <td class="mono">
                {r.url}
                {r.hops && r.hops.length > 0 && (
                  <ol class="hops">
                    {r.hops.map((hop) => (
                      <li>
                        {hop.status} → <span class="mono">{hop.location}</span>
                      </li>
                    ))}
                  </ol>
                )}
              </td>
              <td class={`link-status ${good(r.status) ? 'ok' : 'bad'}`}>{r.note}</td>
            </tr>
          ))}
        </Table>
      )}
      {props.canRecheck && (
        <PostForm action={PATHS.messageCheckLinks.link(org.organizationId, message.id)}>
          <button type="submit" class="secondary">
            Check again
          </button>
        </PostForm>
      )}
    </section>
  )
}
