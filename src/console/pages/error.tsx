/** @jsxImportSource preact */
import type { ConsoleRequest } from '../context.ts'
import { PATHS } from '../paths.ts'
import { renderPage } from '../render.tsx'

const TITLES: Record<number, string> = {
  400: 'Check the form',
  401: 'Sign in',
  403: 'Not allowed',
  404: 'Not found',
  405: 'Not allowed',
  409: 'Not possible',
  411: 'Not a form',
  413: 'Too large',
  415: 'Not a form',
  429: 'Too many attempts',
  500: 'Something went wrong',
}

export function renderError(ctx: ConsoleRequest, status: number, message: string): Promise<Response> {
  const title = TITLES[status] ?? 'Error'
  return renderPage(
    ctx,
    title,
    <section class="card narrow">
      <h2>{title}</h2>
      <p>{message}</p>
      <p>
        <a href={PATHS.home.link()}>Back to the console</a>
      </p>
    </section>,
    { status },
  )
}
