-- KEYS: account, ledger, operation, outbox
-- ARGV: amount, kind, reason, request id, op ttl (0: kept for good), events (JSON), plan tier ('' = none), plan period ms,
--       re-arm the alerts (1/0), tiers (JSON: name -> { rank, priceCents, ... })
local a = load_account(KEYS[1])
if not a then return cjson.encode({ status = 'not_found' }) end
if redis.call('EXISTS', KEYS[3]) == 1 then return cjson.encode({ status = 'duplicate', account = a }) end
local now = now_ms()

-- What the plan does (rules.ts, planOutcome): a renewal extends the period of the tier held, a
-- subscription starts the plan now. It never lowers the tier nor ends one held without an end
-- date: then only the credits are added ('one_time'). Decided here, where it is applied, because
-- the account may have changed since the purchase was offered.
local function plan_outcome(tier, tiers)
  local held = a.tier
  if plan_lapsed(a, now) then held = 'free' end
  if held == tier then
    if a.plan_expires_at == 0 then return 'one_time' end
    return 'renewal'
  end
  local function rank(t) return tiers[t] and tiers[t].rank or 0 end
  if rank(held) > rank(tier) then return 'one_time' end
  return 'subscription'
end

-- The paid time a plan bought over a lower one carries over (rules.ts, carriedOverMs): the unused
-- time's value at the held plan's price, as time at the new plan's price.
local function carried_over_ms(tier, tiers)
  if a.tier == 'free' or a.plan_expires_at <= now then return 0 end
  local held = tiers[a.tier] and tiers[a.tier].priceCents or 0
  local bought = tiers[tier] and tiers[tier].priceCents or 0
  if held <= 0 or bought <= 0 then return 0 end
  return math.floor((a.plan_expires_at - now) * held / bought)
end

local plan_type = nil
if ARGV[7] ~= '' then
  local tiers = cjson.decode(ARGV[10])
  plan_type = plan_outcome(ARGV[7], tiers)
  if plan_type ~= 'one_time' then
    local base = now + carried_over_ms(ARGV[7], tiers)
    if plan_type == 'renewal' then base = a.plan_expires_at end
    a.tier, a.plan_expires_at = ARGV[7], base + tonumber(ARGV[8])
    redis.call('HSET', KEYS[1], 'tier', a.tier, 'plan_expires_at', a.plan_expires_at)
  end
end
top_up(a, KEYS[1], KEYS[2], now, ARGV[2], tonumber(ARGV[1]), ARGV[3], ARGV[4], ARGV[9] ~= '0')
redis.call('HSET', KEYS[3], 'cost', 0, 'state', 'granted')
if tonumber(ARGV[5]) > 0 then redis.call('EXPIRE', KEYS[3], tonumber(ARGV[5])) end
for _, e in ipairs(cjson.decode(ARGV[6])) do
  -- A plan's payment.received says what the plan did: only this step knows.
  if plan_type and e.event == 'payment.received' then e.data.type = plan_type end
  emit(KEYS[4], e.id, e.event, e.timestamp, e.account_id, e.data)
end
return cjson.encode({ status = 'applied', account = a, plan_type = plan_type })
