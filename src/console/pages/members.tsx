/** @jsxImportSource preact */
/** Members of an organisation, open invites, and the one-time invite link. */
import type { Membership } from '../../core/organizations/organizations.ts'
import { PATHS, withQuery } from '../paths.ts'
import { CopyField, PostForm, Table, Time } from './shell.tsx'

interface Member {
  userId: string
  email: string
  role: 'owner' | 'member'
  joinedAt: string
}

interface OpenInvite {
  id: string
  role: 'owner' | 'member'
  createdAt: string
  expiresAt: string
}

function RoleForm({ org, member }: { org: Membership; member: Member }) {
  const other = member.role === 'owner' ? 'member' : 'owner'
  return (
    <PostForm action={PATHS.memberRole.link(org.organizationId, member.userId)} class="inline">
      <input type="hidden" name="role" value={other} />
      <button type="submit" class="secondary">
        Make {other}
      </button>
    </PostForm>
  )
}

export function MembersPage(props: { org: Membership; me: string; members: Member[]; invites: OpenInvite[] }) {
  const { org } = props
  const owner = org.role === 'owner'
  return (
    <>
      <section class="card">
        <h2>Members</h2>
        <Table columns={['Email', 'Role', 'Joined', '']}>
          {props.members.map((member) => (
            <tr data-member={member.email}>
              <td>
                {member.email}
                {member.userId === props.me && <span class="muted"> (you)</span>}
              </td>
              <td>
                <span class="badge">{member.role}</span>
              </td>
              <td>
                <Time at={member.joinedAt} />
              </td>
              <td class="actions">
                {owner && <RoleForm org={org} member={member} />}
                {(owner || member.userId === props.me) && (
                  <PostForm
                    action={PATHS.memberRemove.link(org.organizationId, member.userId)}
                    class="inline"
                    confirm={
                      member.userId === props.me ? `Leave ${org.name}?` : `Remove ${member.email} from ${org.name}?`
                    }
                  >
                    <button type="submit" class="danger">
                      {member.userId === props.me ? 'Leave' : 'Remove'}
                    </button>
                  </PostForm>
                )}
              </td>
            </tr>
          ))}
        </Table>
      </section>
      {owner && (
        <section class="card">
          <h2>Invite someone</h2>
          <p class="muted">
            You get a link to send them yourself (this service sends no mail). It works once and expires after 7 days.
          </p>
          <PostForm action={PATHS.invites.link(org.organizationId)}>
            <label for="invite-role">Role</label>
            <select id="invite-role" name="role">
              <option value="member">member: sees inboxes and messages, and the keys list</option>
              <option value="owner">owner: also manages members and keys and reads the audit log</option>
            </select>
            <div class="form-actions">
              <button type="submit">Create invite link</button>
            </div>
          </PostForm>
          {props.invites.length > 0 && (
            <>
              <h2>Open invites</h2>
              <table>
                <tbody>
                  {props.invites.map((invite) => (
                    <tr>
                      <td class="mono">{invite.id}</td>
                      <td>{invite.role}</td>
                      <td>
                        expires <Time at={invite.expiresAt} />
                      </td>
                      <td>
                        <PostForm action={PATHS.inviteWithdraw.link(org.organizationId, invite.id)} class="inline">
                          <button type="submit" class="danger">
                            Withdraw
                          </button>
                        </PostForm>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
        </section>
      )}
    </>
  )
}

export function InviteCreated(props: { org: Membership; link: string; role: string; expiresAt: string }) {
  return (
    <section class="card">
      <h2>Invite link</h2>
      <p class="notice">
        Send this link to the person you invite. It makes them a {props.role}, works once, and expires{' '}
        <Time at={props.expiresAt} />. It is not shown again.
      </p>
      <CopyField id="invite-link" label="Invite link" value={props.link} />
      <p>
        <a href={PATHS.members.link(props.org.organizationId)}>Back to members</a>
      </p>
    </section>
  )
}

export function AcceptInvite(props: {
  organizationName: string
  role: string
  action: string
  signedInAs: string | null
  error?: string
  email?: string
}) {
  return (
    <section class="card narrow">
      <h2>Join {props.organizationName}</h2>
      <p>You were invited as {props.role}.</p>
      {props.error && <p class="error">{props.error}</p>}
      {props.signedInAs ? (
        <PostForm action={props.action}>
          <p class="muted">Signed in as {props.signedInAs}.</p>
          <button type="submit">Join {props.organizationName}</button>
        </PostForm>
      ) : (
        <>
          <PostForm action={props.action}>
            <label for="email">Your email</label>
            <input id="email" name="email" type="email" required autocomplete="username" value={props.email} />
            <label for="password">Choose a password</label>
            <input id="password" name="password" type="password" required minLength={10} autocomplete="new-password" />
            <div class="form-actions">
              <button type="submit">Create account and join</button>
            </div>
          </PostForm>
          <p class="muted">
            Already have an account? <a href={withQuery(PATHS.signIn.link(), { next: props.action })}>Sign in first</a>,
            then open the link again.
          </p>
        </>
      )}
    </section>
  )
}
