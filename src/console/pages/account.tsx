/** @jsxImportSource preact */
/** The signed-in user's own page: password and sessions. */
import { MIN_PASSWORD_LENGTH } from '../../core/users/users.ts'
import type { Theme } from '../cookies.ts'
import { PATHS } from '../paths.ts'
import { PostForm, Table, Time } from './shell.tsx'

interface SessionRow {
  createdAt: string
  expiresAt: string
  clientAddress: string
  current: boolean
}

export function AccountPage(props: {
  email: string
  sessions: SessionRow[]
  theme: Theme
  notice?: string
  error?: string
}) {
  return (
    <>
      {props.notice && <p class="notice">{props.notice}</p>}
      {props.error && <p class="error">{props.error}</p>}
      <section class="card">
        <h2>Appearance</h2>
        {/* Kept in this browser (a cookie), so it holds before any page is drawn, without a flash. */}
        <PostForm action={PATHS.accountTheme.link()}>
          <fieldset class="theme-choice">
            <legend>Theme</legend>
            {(['system', 'light', 'dark'] as const).map((theme) => (
              <label>
                <input type="radio" name="theme" value={theme} checked={props.theme === theme} />{' '}
                {theme === 'system' ? 'As the system' : theme === 'light' ? 'Light' : 'Dark'}
              </label>
            ))}
          </fieldset>
          <div class="form-actions">
            <button type="submit">Save theme</button>
          </div>
        </PostForm>
      </section>
      <section class="card">
        <h2>Your account</h2>
        <p>{props.email}</p>
        <PostForm action={PATHS.accountPassword.link()}>
          <label for="current">Current password</label>
          <input id="current" name="current" type="password" required autocomplete="current-password" />
          <label for="next-password">New password</label>
          <input
            id="next-password"
            name="password"
            type="password"
            required
            minLength={MIN_PASSWORD_LENGTH}
            autocomplete="new-password"
          />
          <div class="form-actions">
            <button type="submit">Change password</button>
          </div>
        </PostForm>
      </section>
      <section class="card">
        <h2>Sessions</h2>
        <Table columns={['Signed in', 'From', 'Expires unless used', '']}>
          {props.sessions.map((session) => (
            <tr>
              <td>
                <Time at={session.createdAt} />
              </td>
              <td class="mono">{session.clientAddress || '-'}</td>
              <td>
                <Time at={session.expiresAt} />
              </td>
              <td>{session.current && <span class="badge">this browser</span>}</td>
            </tr>
          ))}
        </Table>
        <PostForm
          action={PATHS.accountSignOutEverywhere.link()}
          confirm="Sign out on every browser, this one included?"
        >
          <div class="form-actions">
            <button type="submit" class="danger">
              Sign out everywhere
            </button>
          </div>
        </PostForm>
      </section>
    </>
  )
}
