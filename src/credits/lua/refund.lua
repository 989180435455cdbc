-- KEYS: account, ledger, operation, outbox, idempotency record, key spend
-- ARGV: request id, reason, events (JSON, emitted only if the refund applies), forget the
--       idempotency record (1/0), the operation record's ttl (s)
-- The failed call's Idempotency-Key is forgotten in the same step as the refund: a retry then
-- runs (and is charged) anew, and no crash between the two can hand it a refunded debit.
if ARGV[4] == '1' then redis.call('DEL', KEYS[5]) end
local op = redis.call('HMGET', KEYS[3], 'cost', 'state', 'tool', 'key')
if op[2] == 'refunded' then return cjson.encode({ status = 'already_refunded' }) end
if op[2] ~= 'charged' then return cjson.encode({ status = 'not_charged' }) end
local amount = tonumber(op[1])
redis.call('HSET', KEYS[3], 'state', 'refunded')
local balance = redis.call('HINCRBY', KEYS[1], 'balance', amount)
-- Account controls: when the debit was made, read off its record's remaining lifetime (set once,
-- at the debit: no byte per call spent on it), to give the credits back to the windows it counted in.
local ttl_left = redis.call('PTTL', KEYS[3])
if ttl_left > 0 then unspend(KEYS[1], KEYS[6], op[4] or '', amount, now_ms() - (tonumber(ARGV[5]) * 1000 - ttl_left)) end
-- The refund row names the tool (and key) whose debit it returns.
ledger_add(KEYS[2], now_ms(), 'refund', amount, balance, ARGV[2], ARGV[1], op[3] or '', op[4] or '')
for _, e in ipairs(cjson.decode(ARGV[3])) do
  emit(KEYS[4], e.id, e.event, e.timestamp, e.account_id, e.data)
end
return cjson.encode({ status = 'refunded', amount = amount, balance = balance })
