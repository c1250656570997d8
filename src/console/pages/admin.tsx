/** @jsxImportSource preact */
/** The operator's pages: organisations and their limits, accounts, and instance events. */
import {
  MAX_LIMIT,
  ORG_LIMIT_INFO,
  ORG_LIMIT_NAMES,
  type OrgLimitName,
  type OrgLimits,
} from '../../core/limits/organization-limits.ts'
import { AuditTable } from './audit.tsx'
import { PATHS } from '../paths.ts'
import { LimitPresetChoice } from './setup.tsx'
import { CopyField, PostForm, Table, Time } from './shell.tsx'

interface OrgRow {
  id: string
  name: string
  createdAt: string
  /** The operator belongs to it (else they may join it as owner). */
  member?: boolean
}

interface UserRow {
  id: string
  email: string
  isOperator: boolean
  createdAt: string
}

export function AdminPage(props: {
  orgs: OrgRow[]
  users: UserRow[]
  me: string
  defaults: OrgLimits
  events: Parameters<typeof AuditTable>[0]['events']
}) {
  return (
    <>
      <h1 class="page-title">Operator</h1>
      <section class="card">
        <h2>Organisations</h2>
        <Table columns={['Name', 'Id', 'Created', '']}>
          {props.orgs.map((org) => (
            <tr>
              <td>{org.name}</td>
              <td class="mono">{org.id}</td>
              <td>
                <Time at={org.createdAt} />
              </td>
              <td class="actions">
                <a href={PATHS.adminOrganization.link(org.id)}>Limits</a>
                {org.member === false && (
                  <PostForm action={PATHS.adminJoin.link(org.id)} class="inline">
                    <button type="submit" class="secondary">
                      Join as owner
                    </button>
                  </PostForm>
                )}
              </td>
            </tr>
          ))}
        </Table>
      </section>
      <section class="card">
        <h2>New organisation</h2>
        <p class="muted">You become its owner; invite its members from its Members page, then leave it if you like.</p>
        <PostForm action={PATHS.adminOrganizations.link()}>
          <label for="org-name">Name</label>
          <input id="org-name" name="name" type="text" required maxLength={100} />
          <LimitPresetChoice defaults={props.defaults} suggested="hosted" />
          <div class="form-actions">
            <button type="submit">Create organisation</button>
          </div>
        </PostForm>
      </section>
      <section class="card">
        <h2>Accounts</h2>
        <Table columns={['Email', 'Since', '']}>
          {props.users.map((user) => (
            <tr data-user={user.email}>
              <td>
                {user.email} {user.isOperator && <span class="badge">operator</span>}
              </td>
              <td>
                <Time at={user.createdAt} />
              </td>
              <td class="actions">
                <PostForm
                  action={PATHS.adminResetPassword.link(user.id)}
                  class="inline"
                  confirm={`Give ${user.email} a new password and sign them out everywhere?`}
                >
                  <button type="submit" class="secondary">
                    Reset password
                  </button>
                </PostForm>
                {user.id !== props.me && (
                  <PostForm action={PATHS.adminSignOutEverywhere.link(user.id)} class="inline">
                    <button type="submit" class="danger">
                      Sign out everywhere
                    </button>
                  </PostForm>
                )}
              </td>
            </tr>
          ))}
        </Table>
      </section>
      <section class="card">
        <h2>Instance events</h2>
        <AuditTable events={props.events} />
      </section>
    </>
  )
}

export function LimitsForm(props: {
  org: OrgRow
  overrides: Record<OrgLimitName, number | null>
  defaults: OrgLimits
  error?: string
  notice?: string
}) {
  return (
    <section class="card">
      <h2>Limits of {props.org.name}</h2>
      {props.notice && <p class="notice">{props.notice}</p>}
      {props.error && <p class="error">{props.error}</p>}
      <p class="muted">
        Leave a field empty to follow the server's LIMIT_* value (shown greyed). Changes apply from the next request or
        message.
      </p>
      <PostForm action={PATHS.adminLimits.link(props.org.id)}>
        {ORG_LIMIT_NAMES.map((name) => (
          <>
            <label for={`limit-${name}`}>{ORG_LIMIT_INFO[name].label}</label>
            <input
              id={`limit-${name}`}
              name={name}
              type="number"
              min={1}
              max={MAX_LIMIT}
              value={props.overrides[name] ?? ''}
              placeholder={String(props.defaults[name])}
            />
          </>
        ))}
        <div class="form-actions">
          <button type="submit">Save limits</button>
        </div>
      </PostForm>
    </section>
  )
}

export const PasswordReset = (props: { email: string; password: string }) => (
  <section class="card narrow">
    <h2>New password for {props.email}</h2>
    <p class="notice">Give it to them yourself. It is shown once; their sessions have ended.</p>
    <CopyField id="new-password" label="Password" value={props.password} />
    <p>
      <a href={PATHS.admin.link()}>Back</a>
    </p>
  </section>
)
