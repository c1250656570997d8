#!/usr/bin/env bash
# The recommended test flow with curl only (curl speaks SMTP too): create an inbox, send it
# a mail, wait for it, check it, delete the inbox. Every call's status is checked; a refusal
# stops the script with the API's error code and message.
#
#   PIGEONHOLE_URL=http://localhost:3000 PIGEONHOLE_KEY=ph_live_... PIGEONHOLE_SMTP=127.0.0.1:2525 \
#     bash examples/curl-flow.sh
set -euo pipefail

URL="${PIGEONHOLE_URL:-http://localhost:3000}"
SMTP="${PIGEONHOLE_SMTP:-127.0.0.1:2525}"
: "${PIGEONHOLE_KEY:?set PIGEONHOLE_KEY (make one with: bun src/cli.ts keys create <org-id>)}"
body="$(mktemp)"
id=""
# On any exit, delete the inbox if one was made and not yet deleted, then the temp files.
cleanup() {
  if [ -n "$id" ]; then curl -sS -o /dev/null -X DELETE "$URL/v1/inboxes/$id" -H "Authorization: Bearer $PIGEONHOLE_KEY" || true; fi
  rm -f "$body" "$body.mail"
}
trap cleanup EXIT

# call METHOD PATH EXPECTED_STATUS: prints the body; on any other status, prints the error and exits.
# A refused or dropped connection (a server restarting) and a 429 are tried again (curl
# waits out Retry-After); the POST carries an Idempotency-Key, so a retry never makes two.
call() {
  local status once=()
  [ "$1" = POST ] && once=(-H "Idempotency-Key: curl-flow-$$-$RANDOM$RANDOM")
  status="$(curl -sS --retry 3 --retry-connrefused --retry-max-time 60 -o "$body" -w '%{http_code}' -X "$1" "$URL$2" \
    -H "Authorization: Bearer $PIGEONHOLE_KEY" ${once[@]+"${once[@]}"})"
  if [ "$status" = 204 ] && [ "$3" = 200 ]; then
    echo "$1 $2: no matching mail arrived before wait_seconds ran out (204)" >&2
    echo "the console's inbox page ($URL/console/) lists mail refused for this address" >&2
    exit 1
  fi
  if [ "$status" != "$3" ]; then
    echo "$1 $2 answered $status, expected $3: $(cat "$body")" >&2
    exit 1
  fi
  cat "$body"
}
# field NAME: the first "NAME":"value" of a JSON body on stdin (values here never hold quotes).
field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" | head -1; }

inbox="$(call POST /v1/inboxes 201)"
id="$(echo "$inbox" | field id)"
address="$(echo "$inbox" | field address)"
echo "inbox $address"

printf 'From: App <app@example.com>\r\nTo: %s\r\nSubject: Welcome\r\n\r\nYour code is 123456.\r\n' "$address" >"$body.mail"
curl -sS --fail "smtp://$SMTP" --mail-from app@example.com --mail-rcpt "$address" --upload-file "$body.mail"

message="$(call GET "/v1/inboxes/$id/messages?wait_seconds=30&limit=1&include=content&subject=Welcome" 200)"
case "$message" in
  *'Your code is 123456'*) echo "received: Welcome" ;;
  *) echo "unexpected message: $message" >&2; exit 1 ;;
esac

call DELETE "/v1/inboxes/$id" 204
echo "deleted $id"
id=""
