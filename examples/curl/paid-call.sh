#!/usr/bin/env sh
# Paying per call with x402. curl can show the offer, but cannot sign the EIP-3009 payment it
# asks for; any x402 client can. This asks for the price with curl, then pays with the toolgate
# CLI (the binary from `npm run build:cli`, or `npx toolgate`), whose wallet key stays in a file.
#   WALLET_KEY_FILE=./wallet.key TOOLGATE=./dist/cli/toolgate-linux-x64 sh paid-call.sh
set -eu
BASE="${TOOLGATE_BASE_URL:-http://localhost:8402}"
# 1. No key: 402 with the offer — the v1 body and the v2 PAYMENT-REQUIRED header (base64 JSON).
curl -sS -o /dev/null -D - "$BASE/v1/tools/hash" -H "content-type: application/json" -d '{"text":"hello world"}' \
  | sed -n 's/^[Pp][Aa][Yy][Mm][Ee][Nn][Tt]-[Rr][Ee][Qq][Uu][Ii][Rr][Ee][Dd]: *//p' | tr -d '\r' | base64 -d
echo
# 2. Pay and call (EXTRA_ASSET, e.g. eip155:84532:0x…, allows a test token such as npm start's).
"${TOOLGATE:-toolgate}" call hash --text "hello world" --base-url "$BASE" --wallet-key-file "$WALLET_KEY_FILE" \
  ${EXTRA_ASSET:+--allow-asset "$EXTRA_ASSET"} --max-per-call "${MAX_PER_CALL:-10000}" --json
