-- KEYS: account, ledger, operation, outbox   ARGV: request id, reason, events (JSON, emitted only if the refund applies)
local op = redis.call('HMGET', KEYS[3], 'cost', 'state')
if op[2] == 'refunded' then return cjson.encode({ status = 'already_refunded' }) end
if op[2] ~= 'charged' then return cjson.encode({ status = 'not_charged' }) end
local amount = tonumber(op[1])
redis.call('HSET', KEYS[3], 'state', 'refunded')
local balance = redis.call('HINCRBY', KEYS[1], 'balance', amount)
ledger_add(KEYS[2], now_ms(), 'refund', amount, balance, ARGV[2], ARGV[1], '')
for _, e in ipairs(cjson.decode(ARGV[3])) do
  emit(KEYS[4], e.id, e.event, e.timestamp, e.account_id, e.data)
end
return cjson.encode({ status = 'refunded', amount = amount, balance = balance })
