/**
 * The console as a browser drives it: cookies kept, the CSRF token of the last page repeated
 * in forms, the Origin a browser sends, redirects followed only when asked (post, redirect,
 * get). Enough to sign in, invite, join, leave and make and revoke keys.
 */
export class ConsoleDriver {
  private readonly cookies = new Map<string, string>()
  private csrf: string | undefined

  constructor(readonly baseUrl: string) {}

  private async send(path: string, init: RequestInit & { headers: Record<string, string> }) {
    if (this.cookies.size > 0) init.headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
    const response = await fetch(this.baseUrl + path, { ...init, redirect: 'manual' })
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const eq = pair!.indexOf('=')
      if (pair!.slice(eq + 1) === '' || /Max-Age=0\b/.test(line)) this.cookies.delete(pair!.slice(0, eq))
      else this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1))
    }
    const html = await response.text()
    const token = /name="_csrf" value="([^"]+)"/.exec(html)?.[1]
    if (token) this.csrf = token
    return { status: response.status, html, location: response.headers.get('location') }
  }

  get(path: string) {
    return this.send(path, { method: 'GET', headers: {} })
  }

  /**
   * A form post (`body` already encoded, for bytes a browser may send that a string cannot
   * hold); a redirect is followed once, as a browser does after a form.
   */
  async post(path: string, fields: Record<string, string> | string) {
    const encoded =
      typeof fields === 'string'
        ? `_csrf=${encodeURIComponent(this.csrf ?? '')}&${fields}`
        : new URLSearchParams({ _csrf: this.csrf ?? '', ...fields }).toString()
    const answer = await this.send(path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: this.baseUrl },
      body: encoded,
    })
    if (answer.status >= 400) throw new Error(`POST ${path} answered ${answer.status}`)
    if (answer.status === 303 || answer.status === 302) {
      const next = new URL(answer.location!, this.baseUrl)
      return this.get(next.pathname + next.search)
    }
    return answer
  }

  async signIn(email: string, password: string): Promise<void> {
    await this.get('/console/sign-in')
    const page = await this.send('/console/sign-in', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: this.baseUrl },
      body: new URLSearchParams({ _csrf: this.csrf ?? '', email, password, next: '/console' }).toString(),
    })
    if (page.status !== 303) throw new Error(`sign-in of ${email} answered ${page.status}`)
    await this.get('/console') // a signed-in page, for the session's CSRF token
  }
}
