-- KEYS: account, ledger, outbox   ARGV: account id, email, tier, grant amount, reason, request id, events (JSON)
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.error_reply('account exists') end
local now = now_ms()
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'email', ARGV[2], 'tier', ARGV[3], 'balance', 0, 'reference', 0,
  'low_armed', 0, 'depleted_armed', 0, 'created_at', now, 'allowance_at', 0, 'email_verified', 0)
local a = load_account(KEYS[1])
top_up(a, KEYS[1], KEYS[2], now, 'grant', tonumber(ARGV[4]), ARGV[5], ARGV[6])
for _, e in ipairs(cjson.decode(ARGV[7])) do
  emit(KEYS[3], e.id, e.event, e.timestamp, e.account_id, e.data)
end
return cjson.encode(a)
