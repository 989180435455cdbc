-- KEYS: key list (key id -> JSON), the key's record, the account's key spend
-- ARGV: key id, changes (JSON object of KeyRecord fields), keep one active (1/0),
--       control day ms, control month ms (0: calendar)
-- A key's name and account controls change in one step: the listing's copy and the record the
-- admission script reads never disagree. The record's control fields are computed here from the
-- listing's copy as changed, not by the caller from the copy it read before: two updates racing,
-- each naming another control, would otherwise each write the other's control back as it was.
-- With "keep one active", a change that would set a control on the account's last active key
-- (prelude.lua, last_active_key) is refused: decided here, so changes racing with each other or
-- with a revocation cannot leave the account without a key that can manage its keys.
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return cjson.encode({ status = 'not_found' }) end
local key = cjson.decode(raw)
local was_last = ARGV[3] == '1' and last_active_key(KEYS[1], key)
for field, value in pairs(cjson.decode(ARGV[2])) do key[field] = value end
if was_last and not active_key(key) then
  return cjson.encode({ status = 'last_active_key', key = cjson.decode(raw) })
end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(key))
-- As src/store/keys/redis.ts keyControlFields writes them: 0 or '' = none; tools as ",a,b,".
local function set(v) return v ~= nil and v ~= cjson.null end
local tools = ''
if set(key.allowedTools) then tools = ',' .. table.concat(key.allowedTools, ',') .. ',' end
redis.call('HSET', KEYS[2],
  'expires_at', set(key.expiresAt) and string.format('%d', key.expiresAt) or '0',
  'tools', tools,
  'budget', set(key.budget) and string.format('%d', key.budget.credits) or '0',
  'budget_period', set(key.budget) and key.budget.period or '')
-- A budget's spend field moves to the window of the budget's period as set now (prelude.lua,
-- key_spend): releases before 3381aea read that field in their budget's window only, so after a
-- change of period they would count 0 and write over what the key spent.
if set(key.budget) and redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then
  local period = key.budget.period
  save_key_spend(KEYS[3], ARGV[1], period,
    key_spend(KEYS[3], ARGV[1], period, now_ms(), tonumber(ARGV[4]), tonumber(ARGV[5])))
end
return cjson.encode({ status = 'updated' })
