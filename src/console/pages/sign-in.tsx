/** @jsxImportSource preact */
import { PATHS } from '../paths.ts'
import { PostForm } from './shell.tsx'

export function SignInForm(props: { next: string; error?: string; email?: string; notSetUp?: boolean }) {
  return (
    <section class="card narrow">
      <h2>Sign in</h2>
      {props.notSetUp && (
        <p class="warning">
          Nobody has set up this server yet. Open the one-time setup link it printed when it started (or run{' '}
          <code>bun src/cli.ts setup-link</code>).
        </p>
      )}
      {props.error && <p class="error">{props.error}</p>}
      <PostForm action={PATHS.signIn.link()}>
        <input type="hidden" name="next" value={props.next} />
        <label for="email">Email</label>
        <input id="email" name="email" type="email" required autocomplete="username" value={props.email} />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" required autocomplete="current-password" />
        <div class="form-actions">
          <button type="submit">Sign in</button>
        </div>
      </PostForm>
      <p class="muted">Forgot your password? The operator of this instance can reset it.</p>
    </section>
  )
}
