/** @jsxImportSource preact */
/**
 * A message's HTML support by email client (checks/html-support.ts), as
 * its own GET page: shareable, and reloading costs nothing but the check.
 */
import type { Membership } from '../../core/organizations/organizations.ts'
import type { Message } from '../../core/common/models.ts'
import type { HtmlSupportReport } from '../checks/html-support.ts'
import { MAX_CHECKED_CHARS } from '../checks/html-features.ts'
import { PATHS } from '../paths.ts'
import { Table } from './shell.tsx'

/** Issues listed, the worst first: enough for any real mail, and the page stays under its 50 KB budget. */
const ISSUES_SHOWN = 60

const lines = (found: number[], count: number) =>
  `line${found.length === 1 ? '' : 's'} ${found.join(', ')}${count > found.length ? ` (${count} times in all)` : ''}`

export function HtmlCheckPage({
  org,
  message,
  report,
}: {
  org: Membership
  message: Message
  report: HtmlSupportReport
}) {
  return (
    <>
      <nav class="message-nav" aria-label="Messages">
        <a href={PATHS.message.link(org.organizationId, message.id)}>← {message.subject || '(no subject)'}</a>
      </nav>
      <section class="card" id="html-support">
        <h2 class="page-title">HTML support by email client</h2>
        <p class="muted">
          From caniemail.com's data (updated {report.dataDate.slice(0, 10)}): each HTML and CSS feature the message
          uses, at each client's newest tested version. A score is the share of features and platforms that support them
          (partial support counts half).
          {report.truncated &&
            ` Only the first ${(MAX_CHECKED_CHARS / 1024 / 1024).toFixed(0)} MiB of the HTML was checked.`}
        </p>
        <Table columns={['Client', 'Score']} class="support-scores">
          {report.scores.map((s) => (
            <tr data-family={s.family}>
              <th scope="row">{s.name}</th>
              <td>{s.score === null ? <span class="muted">no data</span> : `${s.score}%`}</td>
            </tr>
          ))}
        </Table>
      </section>
      <section class="card" id="html-support-issues">
        <h2>Not supported everywhere ({report.issues.length})</h2>
        {report.issues.length === 0 ? (
          <p class="muted">Every feature this message uses is supported by all of these clients.</p>
        ) : (
          <ul class="support-issues">
            {report.issues.slice(0, ISSUES_SHOWN).map((issue) => (
              <li data-feature={issue.slug}>
                <a href={issue.url} target="_blank" rel="noopener noreferrer">
                  {issue.title}
                </a>{' '}
                <span class="muted">· {lines(issue.lines, issue.count)} of the HTML</span>
                <ul>
                  {issue.shortfalls.map((f) => {
                    const missing = f.platforms.filter((p) => p.support === 'n').map((p) => p.platform)
                    const partial = f.platforms.filter((p) => p.support === 'a')
                    const everywhere = missing.length === f.platforms.length && f.platforms.length === f.tested
                    return (
                      <li>
                        <strong>{f.name}</strong>:{' '}
                        {everywhere ? 'not supported' : missing.length > 0 && `not on ${missing.join(', ')}`}
                        {missing.length > 0 && partial.length > 0 && '; '}
                        {partial.length > 0 && `partly on ${partial.map((p) => p.platform).join(', ')}`}
                        {partial.some((p) => p.notes.length > 0) && (
                          <span class="muted"> ({[...new Set(partial.flatMap((p) => p.notes))].join(' ')})</span>
                        )}
                      </li>
                    )
                  })}
                </ul>
              </li>
            ))}
          </ul>
        )}
        {report.issues.length > ISSUES_SHOWN && (
          <p class="muted" id="html-support-more">
            And {report.issues.length - ISSUES_SHOWN} more, each missing on fewer platforms than those above.
          </p>
        )}
        {report.supported > 0 && (
          <p class="muted">{report.supported} more features used are supported by all of these clients.</p>
        )}
      </section>
    </>
  )
}
