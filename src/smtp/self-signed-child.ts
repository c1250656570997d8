/**
 * The program self-signed.ts runs in a short-lived child process to make a certificate
 * with the `selfsigned` package, so that the library and its ASN.1 stack never load into
 * the server. Its one argument is a JSON `SelfSignedRequest`; it writes the PEMs as one JSON
 * line on stdout and exits. The production build bundles it beside the server
 * (dist/self-signed-child.js).
 */
import { generate } from 'selfsigned'

export interface SelfSignedRequest {
  domain: string
  /** Validity bounds, in milliseconds since the epoch. */
  notBefore: number
  notAfter: number
}

export interface SelfSignedPems {
  private: string
  cert: string
}

async function main(argument: string | undefined): Promise<void> {
  if (argument === undefined) throw new Error('usage: self-signed-child <request as JSON>')
  const request = JSON.parse(argument) as SelfSignedRequest
  const pems = await generate([{ name: 'commonName', value: request.domain }], {
    keyType: 'ec', // P-256: made in milliseconds, accepted by every TLS 1.2 client
    algorithm: 'sha256',
    notBeforeDate: new Date(request.notBefore),
    notAfterDate: new Date(request.notAfter),
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: request.domain }] }],
  })
  const reply: SelfSignedPems = { private: pems.private, cert: pems.cert }
  process.stdout.write(JSON.stringify(reply))
}

await main(process.argv[2])
