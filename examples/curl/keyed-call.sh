#!/usr/bin/env sh
# Calls a tool with an API key, then shows the account's balance.
#   TOOLGATE_API_KEY=tg_live_… sh keyed-call.sh
set -eu
BASE="${TOOLGATE_BASE_URL:-http://localhost:8402}"
curl -sS --fail-with-body "$BASE/v1/tools/hash" \
  -H "x-api-key: $TOOLGATE_API_KEY" -H "content-type: application/json" \
  -H "idempotency-key: example-$(date +%s)-$$" \
  -d '{"text":"hello world"}'
echo
curl -sS --fail-with-body "$BASE/api/v1/account" -H "x-api-key: $TOOLGATE_API_KEY"
echo
