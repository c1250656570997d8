/** An API answer as tests read it: status, headers, the body parsed when it is JSON, and its text. */
export interface ApiResponse<T = any> {
  status: number
  headers: Headers
  body: T
  text: string
}

/** Reads a fetch response whole; `body` is undefined when the text is empty or not JSON. */
export async function readApiResponse<T = any>(response: Response): Promise<ApiResponse<T>> {
  const text = await response.text()
  let parsed: unknown
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {
    parsed = undefined
  }
  return { status: response.status, headers: response.headers, body: parsed as T, text }
}
