/** @jsxImportSource preact */
/** The organisation's front page: usage this month (the same numbers as getUsage) and its limits. */
import type { Usage } from '../../core/common/models.ts'
import type { OrgLimits } from '../../core/limits/organization-limits.ts'
import { limitRows } from './setup.tsx'
import { PATHS } from '../paths.ts'
import { Time } from './shell.tsx'

/** The month's usage: the numbers getUsage returns (also on the inbox list). */
export function UsageCards({ usage }: { usage: Usage }) {
  return (
    <section class="grid">
      <div class="card">
        <div class="muted">Active inboxes</div>
        <div class="stat" id="usage-inboxes">
          {usage.inboxes.active.toLocaleString('en')} / {usage.inboxes.limit.toLocaleString('en')}
        </div>
      </div>
      <div class="card">
        <div class="muted">Emails received this month</div>
        <div class="stat" id="usage-emails">
          {usage.emails.received.toLocaleString('en')} / {usage.emails.limit.toLocaleString('en')}
        </div>
        <div class="muted">
          Period <Time at={usage.period.starts_at} /> to <Time at={usage.period.ends_at} />
        </div>
      </div>
    </section>
  )
}

export function Overview(props: {
  organizationId: string
  usage: Usage
  limits: OrgLimits
  receivingDomain: string
  isOwner: boolean
}) {
  const { usage } = props
  return (
    <>
      <UsageCards usage={usage} />
      <section class="card">
        <h2>Limits</h2>
        <p class="muted">Set by the operator of this instance.</p>
        <table>
          <tbody>
            {limitRows(props.limits).map((row) => (
              <tr>
                <th scope="row">{row.label}</th>
                <td>{row.value.toLocaleString('en')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <section class="card">
        <h2>Getting started</h2>
        <p>
          Inbox addresses end in <code>@{props.receivingDomain}</code>.{' '}
          <a href={PATHS.inboxes.link(props.organizationId)}>Inboxes</a> shows their mail as it arrives. Tests use an
          API key from <a href={PATHS.keys.link(props.organizationId)}>API keys</a>
          {props.isOwner ? '' : ' (owners create them)'}.
        </p>
      </section>
    </>
  )
}
