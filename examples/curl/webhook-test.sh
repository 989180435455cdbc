#!/usr/bin/env sh
# Registers an HTTPS endpoint for webhooks (a Pro feature), prints the secret it is signed with
# (shown only this once), and sends it a test event.
#   TOOLGATE_API_KEY=tg_live_… WEBHOOK_URL=https://example.com/toolgate sh webhook-test.sh
set -eu
BASE="${TOOLGATE_BASE_URL:-http://localhost:8402}"
registered=$(curl -sS --fail-with-body "$BASE/api/v1/webhooks/register" \
  -H "x-api-key: $TOOLGATE_API_KEY" -H "content-type: application/json" \
  -d "{\"url\":\"$WEBHOOK_URL\",\"events\":[\"credits.low\",\"tool.error\"]}")
echo "$registered"
id=$(printf '%s' "$registered" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
curl -sS --fail-with-body "$BASE/api/v1/webhooks/test" \
  -H "x-api-key: $TOOLGATE_API_KEY" -H "content-type: application/json" -d "{\"webhook_id\":\"$id\"}"
echo
