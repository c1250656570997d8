// The console's only script (served from our origin; the CSP forbids inline script).
// Copy buttons and confirmation prompts. Pages work without it.

document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null
  if (!button) return
  const field = document.getElementById(button.getAttribute('data-copy'))
  if (!field) return
  const done = () => {
    const label = button.textContent
    button.textContent = 'Copied'
    setTimeout(() => (button.textContent = label), 1500)
  }
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(field.value).then(done, () => {
      field.select()
      document.execCommand('copy')
      done()
    })
  } else {
    field.select()
    document.execCommand('copy')
    done()
  }
})

document.addEventListener('submit', (event) => {
  const form = event.target
  if (!(form instanceof HTMLFormElement)) return
  const question = form.getAttribute('data-confirm')
  if (question && !window.confirm(question)) event.preventDefault()
})
