-- Shared by every ledger script (prepended by src/store/redis.ts). The rules here are
-- mirrored for the in-memory store in src/credits/rules.ts; the store contract suite
-- holds the two to the same behaviour.

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function load_account(key)
  local flat = redis.call('HGETALL', key)
  if #flat == 0 then return nil end
  local a = {}
  for i = 1, #flat, 2 do a[flat[i]] = flat[i + 1] end
  for _, f in ipairs({'balance', 'reference', 'low_armed', 'depleted_armed', 'created_at', 'allowance_at', 'email_verified', 'plan_expires_at'}) do
    a[f] = tonumber(a[f]) or 0
  end
  return a
end

-- The entry's fields are what the books exporter copies to PostgreSQL (src/books/exporter.ts).
local function ledger_add(key, at, kind, amount, balance, reason, request_id, tool, key_id)
  redis.call('XADD', key, '*', 'at', at, 'kind', kind, 'amount', amount, 'balance', balance,
    'reason', reason, 'request_id', request_id, 'tool', tool or '', 'key', key_id or '')
end

local function emit(outbox_key, id, event, timestamp, account_id, data)
  redis.call('XADD', outbox_key, '*', 'id', id, 'event', event, 'timestamp', timestamp,
    'account_id', account_id, 'data', cjson.encode(data))
  return { id = id, event = event, timestamp = timestamp, account_id = account_id, data = data }
end

-- A top-up (grant, purchase, allowance) sets the reference level to the new balance and
-- re-arms both alerts (decisions.md D5).
-- A top-up of nothing (a wallet account's opening entry), or one that pays for a single call
-- (rearm false: x402 pay-per-call), leaves the reference level and the alerts as they were.
local function top_up(a, acct_key, ledger_key, at, kind, amount, reason, request_id, rearm)
  a.balance = redis.call('HINCRBY', acct_key, 'balance', amount)
  if amount > 0 and rearm ~= false then
    a.reference, a.low_armed, a.depleted_armed = a.balance, 1, 1
    redis.call('HSET', acct_key, 'reference', a.balance, 'low_armed', 1, 'depleted_armed', 1)
  end
  ledger_add(ledger_key, at, kind, amount, a.balance, reason, request_id, '')
end

-- credits.low fires once when the balance drops below ceil(reference / 5), i.e. below 20%
-- of the reference level; credits.depleted fires once when it reaches 0. Both re-arm on the
-- next top-up.
-- The debit record: one small field (the cost; 'r' once refunded) in the hash of the account's
-- debits of the request id's 30-second slot, which expires as a whole (src/store/redis.ts,
-- debitRecord). All a refund and an Idempotency-Key retry need; the entry is in the ledger.
local function debit(a, keys, cost, at, request_id, reason, tool, key_id, evt_low, evt_depleted, iso, record)
  a.balance = redis.call('HINCRBY', keys.account, 'balance', -cost)
  ledger_add(keys.ledger, at, 'debit', -cost, a.balance, reason, request_id, tool, key_id)
  redis.call('HSET', keys.debits, record.field, cost)
  redis.call('EXPIREAT', keys.debits, record.expire_at)
  local events = {}
  local tool_name = cjson.null
  if tool ~= '' then tool_name = tool end
  local threshold = math.ceil(a.reference / 5)
  if a.low_armed == 1 and a.balance < threshold then
    a.low_armed = 0
    redis.call('HSET', keys.account, 'low_armed', 0)
    events[#events + 1] = emit(keys.outbox, evt_low, 'credits.low', iso, a.id,
      { credits_remaining = a.balance, tool_name = tool_name, threshold = threshold })
  end
  if a.depleted_armed == 1 and a.balance == 0 then
    a.depleted_armed = 0
    redis.call('HSET', keys.account, 'depleted_armed', 0)
    events[#events + 1] = emit(keys.outbox, evt_depleted, 'credits.depleted', iso, a.id,
      { credits_remaining = 0, tool_name = tool_name, message = DEPLETED_MESSAGE })
  end
  return events
end

-- Exact sliding-window log for the endpoint limits (per address, per account: src/http/endpoint-limits.ts):
-- one sorted-set member per admitted request, scored by server time; a member can be released.
-- `count` requests (default 1: an MCP batch counts each message) are admitted all or none.
-- A member already in the window (a paid call's slot, reserved before its payment settled) is
-- admitted again without being counted twice.
local function rate_limit(key, limit, window, member, now, count)
  count = count or 1
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local used = redis.call('ZCARD', key)
  if redis.call('ZSCORE', key, member) then
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    return true, limit - used, tonumber(oldest[2]) + window - now
  end
  if used + count > limit then
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    local reset = window
    if oldest[2] then reset = tonumber(oldest[2]) + window - now end
    return false, limit - math.min(used, limit), reset
  end
  redis.call('ZADD', key, now, member)
  for i = 2, count do redis.call('ZADD', key, now, member .. '#' .. i) end
  redis.call('PEXPIRE', key, window)
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return true, limit - used - count, tonumber(oldest[2]) + window - now
end

-- An account's window: a hash of per-second request counts (at most window/1000 + 1 small fields,
-- so it stays a compact listpack whatever the traffic). A second counts until its last
-- millisecond has left the window, so no window of `window` ms ever admits more than `limit`.
-- `count` requests (an MCP batch counts each message) are admitted all or none.
local function rate_window(key, limit, window, now, count)
  local flat = redis.call('HGETALL', key)
  local used, oldest, stale = 0, nil, {}
  for i = 1, #flat, 2 do
    local second = tonumber(flat[i])
    if (second + 1) * 1000 <= now - window then
      stale[#stale + 1] = flat[i]
    else
      used = used + tonumber(flat[i + 1])
      if not oldest or second < oldest then oldest = second end
    end
  end
  if #stale > 0 then redis.call('HDEL', key, unpack(stale)) end
  if used + count > limit then
    local reset = window
    if oldest then reset = (oldest + 1) * 1000 + window - now end
    return false, limit - math.min(used, limit), reset
  end
  local second = math.floor(now / 1000)
  redis.call('HINCRBY', key, second, count)
  redis.call('PEXPIRE', key, window + 1000)
  if not oldest then oldest = second end
  return true, limit - used - count, (oldest + 1) * 1000 + window - now
end
