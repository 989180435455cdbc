-- KEYS: account, ledger, debit records, outbox, idempotency record, key record, key spend
-- ARGV: request id, reason, events (JSON, emitted only if the refund applies), forget the
--       idempotency record (1/0), the debit record's field, tool, read the key id (1/0),
--       when the debit was made (ms; the start of its record's slot), the call's failed answer
--       (JSON, or '' for none), how long to keep it (ms)
-- The failed call's Idempotency-Key is freed in the same step as the refund: a retry then runs
-- (and is charged) anew, and no crash between the two can hand it a refunded debit. Only a claim
-- this request holds: a refund made without knowing whether its request held the key (the store
-- went away mid-admission) must never free another request's claim. The failed answer stays
-- briefly for the requests that waited on this one (prelude.lua claim_idempotency), so a
-- failing call sent several times at once runs once.
if ARGV[4] == '1' and redis.call('HGET', KEYS[5], 'request_id') == ARGV[1] then
  if ARGV[9] ~= '' then
    redis.call('HSET', KEYS[5], 'state', 'failed', 'failure', ARGV[9])
    redis.call('PEXPIRE', KEYS[5], tonumber(ARGV[10]))
  else
    redis.call('DEL', KEYS[5])
  end
end
local record = redis.call('HGET', KEYS[3], ARGV[5])
if record == 'r' then return cjson.encode({ status = 'already_refunded' }) end
if not record then return cjson.encode({ status = 'not_charged' }) end
-- 'cost', or 'cost:key id' under an Idempotency-Key (prelude.lua, debit).
local cost, charged_key = string.match(record, '^(%d+):?(.*)$')
local amount = tonumber(cost)
redis.call('HSET', KEYS[3], ARGV[5], 'r')
local balance = redis.call('HINCRBY', KEYS[1], 'balance', amount)
rearm_on_refund(KEYS[1], balance)
-- The refund row names the tool and key of the debit it returns: the key the record names, else
-- the caller's (no other key can have taken a call without an Idempotency-Key over).
local key_id = charged_key
if key_id == '' and ARGV[7] == '1' then key_id = redis.call('HGET', KEYS[6], 'id') or '' end
-- Account controls: the credits go back to the spend month and the key's budget window the
-- debit counted in, if that window is still the current one.
unspend(KEYS[1], KEYS[7], key_id, amount, tonumber(ARGV[8]))
ledger_add(KEYS[2], now_ms(), 'refund', amount, balance, ARGV[2], ARGV[1], ARGV[6], key_id)
for _, e in ipairs(cjson.decode(ARGV[3])) do
  emit(KEYS[4], e.id, e.event, e.timestamp, e.account_id, e.data)
end
return cjson.encode({ status = 'refunded', amount = amount, balance = balance })
