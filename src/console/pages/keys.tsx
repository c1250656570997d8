/** @jsxImportSource preact */
/** API keys of an organisation: list for every member, create and revoke for owners. */
import type { Membership } from '../../core/organizations/organizations.ts'
import { PATHS } from '../paths.ts'
import { CopyField, PostForm, Table, Time } from './shell.tsx'

interface KeyRow {
  publicId: string
  name: string
  createdAt: string
  lastUsedAt: string | null
  revokedAt: string | null
  /** The maker's email; null when the CLI made the key. */
  createdBy: string | null
  /** The maker is no longer a member of the organisation. */
  creatorLeft: boolean
}

export function KeysPage(props: {
  org: Membership
  keys: KeyRow[]
  created?: { key: string; name: string }
  createdGone?: boolean
}) {
  const { org } = props
  const owner = org.role === 'owner'
  return (
    <>
      {props.created && (
        <section class="card">
          <p class="notice">
            Key "{props.created.name || 'unnamed'}" created. Copy it now: only its hash is stored, and it is not shown
            again.
          </p>
          <CopyField id="new-key" label="API key" value={props.created.key} />
        </section>
      )}
      {props.createdGone && (
        <section class="card">
          <p class="notice">
            The new key is no longer shown: it is held for 10 minutes, in the browser session that made it. If it was
            not copied, revoke it and create another.
          </p>
        </section>
      )}
      <section class="card">
        <h2>API keys</h2>
        <p class="muted">
          Tests send a key as <code>Authorization: Bearer ph_live_…</code>. A revoked key answers 401 from its next
          request on. Keys belong to the organisation: a key keeps working when the member who made it leaves, so revoke
          and replace one marked "left" if they should no longer have it.
        </p>
        <Table columns={['Public id', 'Name', 'Created by', 'Created', 'Last used', 'Status', owner && '']}>
          {props.keys.map((key) => (
            <tr data-key={key.publicId}>
              <td class="mono">{key.publicId}</td>
              <td>{key.name || <span class="muted">unnamed</span>}</td>
              <td>
                {key.createdBy ?? <span class="muted">the CLI</span>}
                {key.creatorLeft && !key.revokedAt && (
                  <span
                    class="badge warning"
                    title="The member who made this key left the organisation; the key still works."
                  >
                    left the organisation
                  </span>
                )}
              </td>
              <td>
                <Time at={key.createdAt} />
              </td>
              <td>
                <Time at={key.lastUsedAt} />
              </td>
              <td>
                {key.revokedAt ? (
                  <span class="badge revoked">
                    revoked <Time at={key.revokedAt} />
                  </span>
                ) : (
                  <span class="badge">active</span>
                )}
              </td>
              {owner && (
                <td>
                  {!key.revokedAt && (
                    <PostForm
                      action={PATHS.keyRevoke.link(org.organizationId, key.publicId)}
                      class="inline"
                      confirm={`Revoke key ${key.publicId}? Tests using it get 401 at once.`}
                    >
                      <button type="submit" class="danger">
                        Revoke
                      </button>
                    </PostForm>
                  )}
                </td>
              )}
            </tr>
          ))}
        </Table>
        {props.keys.length === 0 && <p class="muted">No keys yet.</p>}
      </section>
      {owner && (
        <section class="card">
          <h2>Create a key</h2>
          <PostForm action={PATHS.keys.link(org.organizationId)}>
            <label for="key-name">Name</label>
            <input id="key-name" name="name" type="text" maxLength={100} placeholder="CI, staging, my laptop" />
            <div class="form-actions">
              <button type="submit">Create key</button>
            </div>
          </PostForm>
        </section>
      )}
    </>
  )
}
