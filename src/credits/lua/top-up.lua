-- KEYS: account, ledger, operation, outbox
-- ARGV: amount, kind, reason, request id, op ttl, events (JSON), plan tier ('' = none), plan period ms,
--       re-arm the alerts (1/0)
local a = load_account(KEYS[1])
if not a then return cjson.encode({ status = 'not_found' }) end
if redis.call('EXISTS', KEYS[3]) == 1 then return cjson.encode({ status = 'duplicate', account = a }) end
local now = now_ms()
if ARGV[7] ~= '' then
  -- A renewal extends the current period; a new plan starts now.
  local base = now
  if a.tier == ARGV[7] and a.plan_expires_at > now then base = a.plan_expires_at end
  a.tier, a.plan_expires_at = ARGV[7], base + tonumber(ARGV[8])
  redis.call('HSET', KEYS[1], 'tier', a.tier, 'plan_expires_at', a.plan_expires_at)
end
top_up(a, KEYS[1], KEYS[2], now, ARGV[2], tonumber(ARGV[1]), ARGV[3], ARGV[4], ARGV[9] ~= '0')
redis.call('HSET', KEYS[3], 'cost', 0, 'state', 'granted')
redis.call('EXPIRE', KEYS[3], tonumber(ARGV[5]))
for _, e in ipairs(cjson.decode(ARGV[6])) do
  emit(KEYS[4], e.id, e.event, e.timestamp, e.account_id, e.data)
end
return cjson.encode({ status = 'applied', account = a })
