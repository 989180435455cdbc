-- The hot path in one round trip: key check and its account controls, Free allowance, rate limit, debit.
-- KEYS: account, key record, rate-limit window, ledger, debit records, outbox, key spend
-- ARGV: tier limits (JSON), check key (1/0), cost, request id, tool, reason,
--       low event id, depleted event id, ISO timestamp, window ms, period ms,
--       debit records' expiry (unix seconds),
--       requests to count (0 = none: the key is checked and the debit made, nothing counted),
--       last-used resolution ms, the debit record's field,
--       spend-alert event id, control day ms, control month ms (0: calendar)
local now = now_ms()
local key_id = cjson.null
-- Account controls on the key (expiry, tools, budget): refused here, before anything is counted.
local key_limited, budget = false, nil
if ARGV[2] == '1' then
  local k = redis.call('HMGET', KEYS[2], 'id', 'revoked_at', 'last_used_at', 'expires_at', 'tools', 'budget', 'budget_period')
  if not k[1] then return cjson.encode({ status = 'invalid_key' }) end
  local revoked_at = tonumber(k[2]) or 0
  if revoked_at > 0 and now >= revoked_at then return cjson.encode({ status = 'revoked' }) end
  local expires_at = tonumber(k[4]) or 0
  if expires_at > 0 and now >= expires_at then return cjson.encode({ status = 'expired', expires_at = expires_at }) end
  -- `tools` is ",name,name," so a lookup is one plain find.
  local tools = k[5] or ''
  if tools ~= '' and ARGV[5] ~= '' and not string.find(tools, ',' .. ARGV[5] .. ',', 1, true) then
    return cjson.encode({ status = 'tool_not_allowed', tools = tools })
  end
  if (tonumber(k[6]) or 0) > 0 then budget = { credits = tonumber(k[6]), period = k[7] } end
  key_limited = expires_at > 0 or tools ~= '' or budget ~= nil
  key_id = k[1]
  -- The key list shows when each key was last used; rewritten at most once per resolution window.
  if now - (tonumber(k[3]) or 0) >= tonumber(ARGV[14]) then redis.call('HSET', KEYS[2], 'last_used_at', now) end
end
local a = load_account(KEYS[1])
if not a then return cjson.encode({ status = 'invalid_key' }) end
local keys = { account = KEYS[1], ledger = KEYS[4], debits = KEYS[5], outbox = KEYS[6] }
-- A paid plan whose period ended unpaid falls back to Free, on this very request.
if a.tier ~= 'free' and a.plan_expires_at > 0 and now >= a.plan_expires_at then
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
local rate = { limit = tier.requestsPerMinute, remaining = -1, resetMs = 0 }
if requests > 0 then
  local allowed, remaining, reset = rate_window(KEYS[3], tier.requestsPerMinute, tonumber(ARGV[10]), now, requests)
  rate = { limit = tier.requestsPerMinute, remaining = remaining, resetMs = reset }
  if not allowed then return cjson.encode({ status = 'rate_limited', account = a, rate = rate }) end
end

local cost = tonumber(ARGV[3])
local charged, events = false, {}
if cost > 0 and redis.call('HEXISTS', KEYS[5], ARGV[15]) == 0 then
  local day_ms, month_ms = tonumber(ARGV[17]), tonumber(ARGV[18])
  -- The key's own budget first: a call that would take it past its budget is refused, uncharged.
  local budget_start, spent
  if budget then
    local next_start
    budget_start, next_start = control_window(now, budget.period, day_ms, month_ms)
    spent = key_spend(KEYS[7], key_id, budget_start)
    if spent + cost > budget.credits then
      return cjson.encode({ status = 'key_budget_exceeded', account = a, rate = rate, budget = {
        credits = budget.credits, period = budget.period, spent = spent, window_start = budget_start, resets_at = next_start } })
    end
  end
  if a.balance < cost then return cjson.encode({ status = 'insufficient_credits', account = a, rate = rate }) end
  local key_name = ''
  if key_id ~= cjson.null then key_name = key_id end
  events = debit(a, keys, cost, now, ARGV[4], ARGV[6], ARGV[5], key_name, ARGV[7], ARGV[8], ARGV[9],
    { field = ARGV[15], expire_at = tonumber(ARGV[12]) })
  if budget then redis.call('HSET', KEYS[7], key_id, string.format('%d:%d', budget_start, spent + cost)) end
  local alert = count_spend(a, keys, cost, now, day_ms, month_ms, ARGV[16], ARGV[9], ARGV[5])
  if alert then events[#events + 1] = alert end
  charged = true
end
return cjson.encode({ status = 'ok', account = a, key_id = key_id, key_limited = key_limited, rate = rate, charged = charged, events = events })
