// live-worker.js is served as text (imported `with { type: 'text' }`), never run by the server.
declare const text: string
export default text
