-- KEYS: key list (key id -> JSON), the key's record
-- ARGV: key id, the listing's copy (JSON), cap ('' = none), then the record's fields and values
-- Lives beside the ledger scripts because it shares their loader. The account's live keys are
-- counted here, in the step that adds the key: counted by the caller first, requests racing for
-- the last places each passed the count and the account ended over its cap.
-- Live: not revoked yet (no revocation, or one still ahead: a key in its rotation grace counts,
-- an expired key never revoked too), as src/store/types.ts isRevoked reads a key.
if ARGV[3] ~= '' then
  local now, live = now_ms(), 0
  for _, raw in ipairs(redis.call('HVALS', KEYS[1])) do
    local at = cjson.decode(raw).revokedAt
    if at == nil or at == cjson.null or at > now then live = live + 1 end
  end
  if live >= tonumber(ARGV[3]) then return 0 end
end
redis.call('HSET', KEYS[2], unpack(ARGV, 4))
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
