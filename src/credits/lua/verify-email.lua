-- KEYS: account, ledger, operation   ARGV: amount, reason, request id, period ms, op ttl
local a = load_account(KEYS[1])
if not a then return 'not_found' end
if a.email_verified == 1 then return 'already_verified' end
local now = now_ms()
redis.call('HSET', KEYS[1], 'email_verified', 1, 'allowance_at', now + tonumber(ARGV[4]))
top_up(a, KEYS[1], KEYS[2], now, 'grant', tonumber(ARGV[1]), ARGV[2], ARGV[3])
redis.call('HSET', KEYS[3], 'cost', 0, 'state', 'granted')
redis.call('EXPIRE', KEYS[3], tonumber(ARGV[5]))
return 'verified'
