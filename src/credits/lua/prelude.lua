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
  for _, f in ipairs({'balance', 'reference', 'low_armed', 'depleted_armed', 'created_at', 'allowance_at', 'email_verified', 'plan_expires_at',
      'spend_window', 'spend', 'spend_alert', 'spend_alerted'}) do
    a[f] = tonumber(a[f]) or 0
  end
  return a
end

-- Whether the account's paid plan period has ended unpaid at `now`: it then counts as Free
-- (rules.ts planLapsed is its twin).
local function plan_lapsed(a, now)
  return a.tier ~= 'free' and a.plan_expires_at > 0 and now >= a.plan_expires_at
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

-- The credit level below which credits.low fires: 20% of the reference level, rounded up
-- (rules.ts, lowThreshold).
local function low_threshold(reference)
  return math.ceil(reference / 5)
end

-- credits.low fires once when the balance drops below ceil(reference / 5), i.e. below 20%
-- of the reference level; credits.depleted fires once when it reaches 0. Both re-arm on the
-- next top-up, and on a refund that lifts the balance back over their line (rearm_on_refund).
-- The debit record: one small field (the cost; 'r' once refunded) in the hash of the account's
-- debits of the request id's 30-second slot, which expires as a whole (src/store/redis.ts,
-- debitRecord). All a refund and an Idempotency-Key retry need; the entry is in the ledger.
-- Under an Idempotency-Key it is 'cost:key id' (record.name_key): another key of the account may
-- take the call over and be refunded it, and the budget to give back is the charged key's.
local function debit(a, keys, cost, at, request_id, reason, tool, key_id, evt_low, evt_depleted, iso, record)
  a.balance = redis.call('HINCRBY', keys.account, 'balance', -cost)
  ledger_add(keys.ledger, at, 'debit', -cost, a.balance, reason, request_id, tool, key_id)
  local value = cost
  if record.name_key and key_id ~= '' then value = cost .. ':' .. key_id end
  redis.call('HSET', keys.debits, record.field, value)
  redis.call('EXPIREAT', keys.debits, record.expire_at)
  local events = {}
  local tool_name = cjson.null
  if tool ~= '' then tool_name = tool end
  local threshold = low_threshold(a.reference)
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

-- A refund that lifts the balance back over an alert's line re-arms that alert: the refunded
-- call's alert must not stand in for the next real one. Only on an account a top-up has armed
-- (reference > 0): a wallet's pay-per-call account has no alerts.
local function rearm_on_refund(acct_key, balance)
  local reference = tonumber(redis.call('HGET', acct_key, 'reference') or '0')
  if reference <= 0 then return end
  if balance >= low_threshold(reference) then redis.call('HSET', acct_key, 'low_armed', 1) end
  if balance > 0 then redis.call('HSET', acct_key, 'depleted_armed', 1) end
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
  -- When the oldest counted second leaves the window, never announced beyond the window itself (a
  -- Retry-After within the minute), though a second whose calls filled it may count a second longer.
  if used + count > limit then
    local reset = window
    if oldest then reset = math.min((oldest + 1) * 1000 + window - now, window) end
    return false, limit - math.min(used, limit), reset
  end
  local second = math.floor(now / 1000)
  redis.call('HINCRBY', key, second, count)
  redis.call('PEXPIRE', key, window + 1000)
  if not oldest then oldest = second end
  return true, limit - used - count, math.min((oldest + 1) * 1000 + window - now, window)
end

-- An active key, in the sense of the last_active_key guard (types.ts, isActiveKey; `k` is the
-- listing's JSON copy): no revocation scheduled (a key in its rotation grace stops working soon)
-- and no account controls (a limited key manages no keys; an expiry is a control, so an active key
-- never lapses either).
local function active_key(k)
  local function set(v) return v ~= nil and v ~= cjson.null end
  return not set(k.revokedAt) and not set(k.expiresAt) and not set(k.allowedTools) and not set(k.budget)
end

-- Whether `key` is its account's last active key (types.ts, isLastActiveKey; KEYS `list`: the
-- account's key listing): revoking it, or setting a control on it, would leave none.
local function last_active_key(list, key)
  if not active_key(key) then return false end
  for _, raw in ipairs(redis.call('HVALS', list)) do
    local other = cjson.decode(raw)
    if other.id ~= key.id and active_key(other) then return false end
  end
  return true
end

-- Account controls (docs/decisions.md, "Account controls"): the windows of key budgets and of the
-- spend alert, each key's spend in its budget window, the account's spend in its month. Mirrored
-- for the in-memory store in src/credits/controls.ts.

-- Days since the epoch <-> civil date (Howard Hinnant's algorithms), for calendar months in UTC.
local DAY_MS = 86400000
local function civil_from_days(z)
  z = z + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y, m, d
end

local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = m > 2 and m - 3 or m + 9
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  return era * 146097 + yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy - 719468
end

-- The window of `period` ('day' or 'month') holding `at`: its start and the next one's (epoch ms).
-- Windows are epoch-aligned lengths; a month length of 0 means the calendar month (UTC).
local function control_window(at, period, day_ms, month_ms)
  local length = day_ms
  if period == 'month' then length = month_ms end
  if length > 0 then
    local start = math.floor(at / length) * length
    return start, start + length
  end
  local y, m = civil_from_days(math.floor(at / DAY_MS))
  local ny, nm = y, m + 1
  if nm > 12 then ny, nm = y + 1, 1 end
  return days_from_civil(y, m, 1) * DAY_MS, days_from_civil(ny, nm, 1) * DAY_MS
end

local function iso_ms(ms)
  local days = math.floor(ms / DAY_MS)
  local y, m, d = civil_from_days(days)
  local rest = ms - days * DAY_MS
  return string.format('%04d-%02d-%02dT%02d:%02d:%02d.%03dZ', y, m, d, math.floor(rest / 3600000),
    math.floor(rest / 60000) % 60, math.floor(rest / 1000) % 60, rest % 1000)
end

-- A budgeted key's spend lives in the account's key-spend hash, in two fields:
-- * key id -> "<window start>:<credits>", the window of the budget's period: the record every
--   release enforces the budget by. Releases before 3381aea read and write only this form, so it
--   keeps it (3381aea's "<day start>:<credits>:<month start>:<credits>" there made them read 0 and
--   write back one window, which new code then read as the month's: budgets passed in a mixed fleet).
--   The one release with 3381aea in it writes that four-part form here still; it is read too.
-- * "<key id>:periods" -> "<day start>:<credits>:<month start>:<credits>", written by this code
--   only: what the key spent today and this month whatever its budget's period, so a budget whose
--   period changes counts what the key already spent in the new period's window (controls.ts,
--   KeySpend). Key ids have no ':' and a hold is "hold:...", so the field names cannot meet.
local function key_periods_field(key_id) return key_id .. ':periods' end

-- A record's windows: { { start, credits } } for "<start>:<credits>", two for the four-part form.
local function parse_windows(raw)
  if not raw then return nil end
  local a, b, c, d = string.match(raw, '^(%d+):(%d+):(%d+):(%d+)$')
  if a then
    return { { start = tonumber(a), credits = tonumber(b) }, { start = tonumber(c), credits = tonumber(d) } }
  end
  a, b = string.match(raw, '^(%d+):(%d+)$')
  if a then return { { start = tonumber(a), credits = tonumber(b) } } end
  return nil
end

local function format_windows(windows)
  local parts = {}
  for _, w in ipairs(windows) do parts[#parts + 1] = string.format('%d:%d', w.start, w.credits) end
  return table.concat(parts, ':')
end

-- A record as { day, month }: a one-window record (its period not known now) counts as either,
-- in each current window it began in.
local function parse_key_spend_windows(w)
  if not w then return nil end
  return { day = w[1], month = w[2] or w[1] }
end

local function parse_key_spend(raw) return parse_key_spend_windows(parse_windows(raw)) end

-- What older releases counted in the main field since this code last wrote it: the main field's
-- windows less the periods field's record of the same window (the most, over the windows both
-- name: the four-part release reads a one-window record of another period as nothing in its
-- window, and writes that down), and the time it counts from. This code writes both fields at once, so
-- that is spent (or, below 0, refunded) since then, and no earlier than the day the periods field
-- was written in. A main field whose windows the periods field does not know began after it: all
-- of the budget's period's record there is counted, from that record's window.
local function spent_since(main, record, known)
  local since, from = record.credits, record.start
  local matched = false
  for _, w in ipairs(main) do
    for _, k in ipairs({ known.day, known.month }) do
      if k.start == w.start and (not matched or w.credits - k.credits > since) then
        matched, since, from = true, w.credits - k.credits, w.start
        -- A refund given back there may be of a debit made before that day.
        if since > 0 then from = math.max(w.start, known.day.start) end
      end
    end
  end
  return since, from
end

-- The key's spend in today's window and this month's (controls.ts, spentIn; mirrored for listing
-- in src/store/keys/redis-key-spend.ts): credits counted in a window that began before the current
-- one are gone. The periods field as this code left it, plus what was counted in the main field
-- since; and never less than the main field's own record says (every release counts in it, none
-- counts there more than was spent), so the budget's own period counts what every release enforces.
local function key_spend(spend_key, key_id, period, now, day_ms, month_ms)
  local main_windows = parse_windows(redis.call('HGET', spend_key, key_id))
  local main = parse_key_spend_windows(main_windows)
  local known = parse_key_spend(redis.call('HGET', spend_key, key_periods_field(key_id))) or main
  local since, from = 0, 0
  if main then since, from = spent_since(main_windows, main[period], known) end
  local spend = {}
  for _, p in ipairs({ 'day', 'month' }) do
    local start = control_window(now, p, day_ms, month_ms)
    local credits = 0
    if known and known[p].start >= start then credits = known[p].credits end
    if main and from >= start then credits = math.max(0, credits + since) end
    if main and main[p].start >= start then credits = math.max(credits, main[p].credits) end
    spend[p] = { start = start, credits = credits }
  end
  return spend
end

local function save_key_spend(spend_key, key_id, period, spend)
  redis.call('HSET', spend_key, key_id, format_windows({ spend[period] }),
    key_periods_field(key_id), format_windows({ spend.day, spend.month }))
end

-- A refund's credits go back to each window of a record the debit was made in; the record keeps
-- its form (an older release reading the main field reads it as before).
local function give_back_key_spend(spend_key, field, amount, debit_at)
  local windows = parse_windows(redis.call('HGET', spend_key, field))
  if not windows then return end
  for _, w in ipairs(windows) do
    if w.start <= debit_at then w.credits = math.max(0, w.credits - amount) end
  end
  redis.call('HSET', spend_key, field, format_windows(windows))
end

-- The credits held in a key's budget by calls checked but not yet debited (x402 calls whose
-- payment is being taken): fields "hold:<request id>" of the key-spend hash, each
-- "<credits>:<until ms>:<key id>"; a hold past its time (a process that died) is dropped here.
local function budget_held(spend_key, key_id, now)
  local held, all = 0, redis.call('HGETALL', spend_key)
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 5) == 'hold:' then
      local credits, till, owner = string.match(all[i + 1], '^(%d+):(%d+):(.+)$')
      if tonumber(till) <= now then redis.call('HDEL', spend_key, all[i])
      elseif owner == key_id then held = held + tonumber(credits) end
    end
  end
  return held
end

-- Counts a debit in the account's spend month; returns the spend alert's event when this debit
-- takes the month's spend to the alert's threshold, once per month (it re-arms when set again).
local function count_spend(a, keys, cost, now, day_ms, month_ms, evt_id, iso, tool)
  local start = control_window(now, 'month', day_ms, month_ms)
  if a.spend_window ~= start then a.spend_window, a.spend = start, 0 end
  a.spend = a.spend + cost
  redis.call('HSET', keys.account, 'spend_window', start, 'spend', a.spend)
  if a.spend_alert > 0 and a.spend >= a.spend_alert and a.spend_alerted ~= start then
    a.spend_alerted = start
    redis.call('HSET', keys.account, 'spend_alerted', start)
    local tool_name = cjson.null
    if tool ~= '' then tool_name = tool end
    return emit(keys.outbox, evt_id, 'spend.threshold_reached', iso, a.id, { threshold = a.spend_alert,
      spent = a.spend, period = 'month', period_start = iso_ms(start), tool_name = tool_name })
  end
  return nil
end

-- A refund gives its credits back to the spend month and the key's budget window it was counted
-- in: only if that window is still the current one (the debit came after the window began).
-- Taking the month's spend back under the alert re-arms it, as a refund re-arms credits.low
-- (controls.ts, giveBackSpend): the refunded call's alert must not stand in for the real one.
local function unspend(account_key, spend_key, key_id, amount, debit_at)
  local acct = redis.call('HMGET', account_key, 'spend_window', 'spend', 'spend_alert', 'spend_alerted')
  local window = tonumber(acct[1])
  if window and window <= debit_at then
    local spend = math.max(0, (tonumber(acct[2]) or 0) - amount)
    redis.call('HSET', account_key, 'spend', spend)
    if tonumber(acct[4]) == window and spend < (tonumber(acct[3]) or 0) then
      redis.call('HSET', account_key, 'spend_alerted', 0)
    end
  end
  if key_id == '' then return end
  give_back_key_spend(spend_key, key_id, amount, debit_at)
  give_back_key_spend(spend_key, key_periods_field(key_id), amount, debit_at)
end

-- admit.lua's work, as a table (idempotent-admit.lua runs it too): the hot path in one round
-- trip: key check and its account controls, Free allowance, rate limit, debit.
-- KEYS: account, key record, rate-limit window, ledger, debit records, outbox, key spend
-- ARGV: tier limits (JSON), check key (1/0), cost, request id, tool, reason,
--       low event id, depleted event id, ISO timestamp, window ms, period ms,
--       debit records' expiry (unix seconds),
--       requests to count (0 = none: the key is checked and the debit made, nothing counted),
--       last-used resolution ms, the debit record's field,
--       spend-alert event id, control day ms, control month ms (0: calendar),
--       check only (1: the key's controls for the cost and the rate limit, whatever the balance; no debit),
--       budget hold id ('' none: a check holds the cost in the key's budget under it, the debit releases it),
--       budget hold ms
-- name_key: the debit record names the key charged (a call under an Idempotency-Key; see debit).
local function admit_call(name_key)
  local now = now_ms()
  local key_id = cjson.null
  -- Account controls on the key (expiry, tools, budget): refused here, before anything is counted.
  local key_limited, budget = false, nil
  if ARGV[2] == '1' then
    local k = redis.call('HMGET', KEYS[2], 'id', 'revoked_at', 'last_used_at', 'expires_at', 'tools', 'budget', 'budget_period')
    if not k[1] then return { status = 'invalid_key' } end
    local revoked_at = tonumber(k[2]) or 0
    if revoked_at > 0 and now >= revoked_at then return { status = 'revoked' } end
    local expires_at = tonumber(k[4]) or 0
    if expires_at > 0 and now >= expires_at then return { status = 'expired', expires_at = expires_at } end
    -- `tools` is ",name,name," so a lookup is one plain find.
    local tools = k[5] or ''
    if tools ~= '' and ARGV[5] ~= '' and not string.find(tools, ',' .. ARGV[5] .. ',', 1, true) then
      return { status = 'tool_not_allowed', tools = tools }
    end
    if (tonumber(k[6]) or 0) > 0 then budget = { credits = tonumber(k[6]), period = k[7] } end
    key_limited = expires_at > 0 or tools ~= '' or budget ~= nil
    key_id = k[1]
    -- The key list shows when each key was last used; rewritten at most once per resolution window.
    if now - (tonumber(k[3]) or 0) >= tonumber(ARGV[14]) then redis.call('HSET', KEYS[2], 'last_used_at', now) end
  end
  local a = load_account(KEYS[1])
  if not a then return { status = 'invalid_key' } end
  local keys = { account = KEYS[1], ledger = KEYS[4], debits = KEYS[5], outbox = KEYS[6] }
  -- A paid plan whose period ended unpaid falls back to Free, on this very request.
  if plan_lapsed(a, now) then
    a.tier, a.plan_expires_at = 'free', 0
    redis.call('HSET', KEYS[1], 'tier', 'free', 'plan_expires_at', 0)
  end
  local tiers = cjson.decode(ARGV[1])
  local tier = tiers[a.tier] or tiers['free']

  -- Free monthly allowance (decisions.md D3): top up to the allowance, never add to it.
  local period = tonumber(ARGV[11])
  if a.tier == 'free' and a.allowance_at > 0 and now >= a.allowance_at then
    if a.balance < tier.monthlyAllowance then
      top_up(a, KEYS[1], KEYS[4], now, 'allowance', tier.monthlyAllowance - a.balance, 'monthly Free allowance', 'allowance:' .. a.allowance_at)
    end
    a.allowance_at = a.allowance_at + period * (math.floor((now - a.allowance_at) / period) + 1)
    redis.call('HSET', KEYS[1], 'allowance_at', a.allowance_at)
  end

  local requests = tonumber(ARGV[13])
  -- Several messages count each only for a tier that may send them (TierLimits `countsMessages`).
  if requests > 1 and not tier.countsMessages then requests = 1 end
  local rate = { limit = tier.requestsPerMinute, remaining = -1, resetMs = 0 }
  if requests > 0 then
    local allowed, remaining, reset = rate_window(KEYS[3], tier.requestsPerMinute, tonumber(ARGV[10]), now, requests)
    rate = { limit = tier.requestsPerMinute, remaining = remaining, resetMs = reset }
    if not allowed then return { status = 'rate_limited', account = a, rate = rate } end
  end

  local cost = tonumber(ARGV[3])
  local charged, events = false, {}
  if cost > 0 and redis.call('HEXISTS', KEYS[5], ARGV[15]) == 0 then
    local day_ms, month_ms = tonumber(ARGV[17]), tonumber(ARGV[18])
    -- The key's own budget first: a call that would take it past its budget is refused, uncharged.
    local key_spent
    local hold = ''
    if ARGV[20] ~= '' then hold = 'hold:' .. ARGV[20] end
    if budget then
      local budget_start, next_start = control_window(now, budget.period, day_ms, month_ms)
      key_spent = key_spend(KEYS[7], key_id, budget.period, now, day_ms, month_ms)
      local spent = key_spent[budget.period].credits
      -- The debit of a call its check held budget for takes the hold's place.
      if hold ~= '' and ARGV[19] ~= '1' then redis.call('HDEL', KEYS[7], hold) end
      local held = budget_held(KEYS[7], key_id, now)
      if spent + held + cost > budget.credits then
        return { status = 'key_budget_exceeded', account = a, rate = rate, budget = {
          credits = budget.credits, period = budget.period, spent = spent + held, window_start = budget_start, resets_at = next_start } }
      end
    end
    -- A call about to be paid for with its own credits (x402) is checked up to here, before the
    -- payment is taken; its cost is held in the key's budget until its debit (or the hold's end),
    -- so calls checked side by side cannot all pass and then be refused after paying.
    if ARGV[19] == '1' then
      local budget_hold = budget ~= nil and hold ~= ''
      if budget_hold then
        redis.call('HSET', KEYS[7], hold, string.format('%d:%d:%s', cost, now + tonumber(ARGV[21]), key_id))
      end
      return { status = 'ok', account = a, key_id = key_id, key_limited = key_limited, rate = rate, charged = false, events = {}, budget_held = budget_hold }
    end
    if a.balance < cost then return { status = 'insufficient_credits', account = a, rate = rate } end
    local key_name = ''
    if key_id ~= cjson.null then key_name = key_id end
    events = debit(a, keys, cost, now, ARGV[4], ARGV[6], ARGV[5], key_name, ARGV[7], ARGV[8], ARGV[9],
      { field = ARGV[15], expire_at = tonumber(ARGV[12]), name_key = name_key })
    if budget then
      key_spent.day.credits = key_spent.day.credits + cost
      key_spent.month.credits = key_spent.month.credits + cost
      save_key_spend(KEYS[7], key_id, budget.period, key_spent)
    end
    local alert = count_spend(a, keys, cost, now, day_ms, month_ms, ARGV[16], ARGV[9], ARGV[5])
    if alert then events[#events + 1] = alert end
    charged = true
  elseif cost > 0 and redis.call('HGET', KEYS[5], ARGV[15]) == 'r' then
    -- Debited under this request id and refunded since: charged nothing, and said so (a facilitator
    -- fee given back means its settlement was being released: payments.ts settleAbandoned).
    return { status = 'ok', account = a, key_id = key_id, key_limited = key_limited, rate = rate, charged = false, events = {}, refunded = true }
  end
  return { status = 'ok', account = a, key_id = key_id, key_limited = key_limited, rate = rate, charged = charged, events = events }
end

-- idempotency-begin.lua's work, as a table (idempotent-admit.lua runs it too).
-- record: the idempotency record; the claim's fingerprint, lease ms, request id, record ttl ms,
-- and the request id this request has waited on ('' for none).
-- Claims the key for one execution, or reports what became of the claim already made.
-- The record outlives its lease: a claim whose holder died (lease over, no answer) is taken
-- over with the request id it was charged under, so the retry reuses that debit. The request
-- that holds the claim may begin again (a paid call claims its key before settling its payment,
-- then runs under that claim). A failed execution (refund.lua) leaves its answer for a short
-- while, for the requests that waited on it; to any other request the key is free.
local function claim_idempotency(record, fingerprint, lease_ms, request_id, ttl_ms, awaiting)
  local now = now_ms()
  local r = redis.call('HMGET', record, 'state', 'fingerprint', 'response', 'request_id', 'lease_until', 'failure')
  if r[1] == 'failed' then
    if awaiting ~= '' and awaiting == r[4] then return { state = 'failed', failure = cjson.decode(r[6]) } end
    redis.call('DEL', record)
    r[1] = false
  end
  if not r[1] then
    redis.call('HSET', record, 'state', 'in_progress', 'fingerprint', fingerprint, 'request_id', request_id, 'lease_until', now + tonumber(lease_ms))
    -- Never gone before its lease ends (a record's lifetime shorter than a long tool's lease let a
    -- retry meanwhile claim it afresh: run and charged twice).
    redis.call('PEXPIRE', record, math.max(tonumber(ttl_ms), tonumber(lease_ms)))
    return { state = 'started', requestId = request_id }
  end
  if r[2] ~= fingerprint then return { state = 'conflict' } end
  if r[1] == 'completed' then return { state = 'completed', response = cjson.decode(r[3]) } end
  if r[1] == 'not_kept' then return { state = 'not_kept' } end
  if r[4] ~= request_id and now < (tonumber(r[5]) or 0) then return { state = 'in_progress', requestId = r[4] } end
  redis.call('HSET', record, 'lease_until', now + tonumber(lease_ms))
  local ttl = redis.call('PTTL', record)
  if ttl >= 0 and ttl < tonumber(lease_ms) then redis.call('PEXPIRE', record, tonumber(lease_ms)) end
  return { state = 'started', requestId = r[4] }
end
