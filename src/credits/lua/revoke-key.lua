-- KEYS: key list (key id -> JSON), the key's record, the account's key spend (key id -> spend)
-- ARGV: key id, grace ms, keep one active (1/0), the replacing key's id ('' = not a rotation),
-- how many revoked keys the account keeps
-- A key already revoked stays as it is. With "keep one active", the account's last active key
-- (prelude.lua, last_active_key: no revocation scheduled, no controls) is not revoked: decided here,
-- so two concurrent revocations cannot both pass the check and leave the account without a key
-- that can manage its keys.
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return cjson.encode({ status = 'not_found' }) end
local key = cjson.decode(raw)
key.lastUsedAt = tonumber(redis.call('HGET', KEYS[2], 'last_used_at'))
local now = now_ms()
local scheduled = key.revokedAt ~= cjson.null and key.revokedAt ~= nil
if scheduled and key.revokedAt <= now then return cjson.encode({ status = 'already_revoked', key = key }) end
-- A rotation replaces a key once: decided here, so two racing rotations cannot both leave a
-- replacement working (and a budgeted key's budget twice over).
local rotation = ARGV[4] ~= ''
if rotation and scheduled then return cjson.encode({ status = 'already_rotated', key = key }) end
if ARGV[3] == '1' and last_active_key(KEYS[1], key) then
  return cjson.encode({ status = 'last_active_key', key = key })
end
local at = now + tonumber(ARGV[2])
if scheduled and key.revokedAt < at then at = key.revokedAt end
key.revokedAt = at
local stored = cjson.decode(raw)
stored.revokedAt = at
if rotation then key.replacedBy, stored.replacedBy = ARGV[4], ARGV[4] end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(stored))
redis.call('HSET', KEYS[2], 'revoked_at', at)

-- The account keeps its most recently revoked keys only (src/store/keys/revoked-kept.ts, which
-- the memory store runs): the others leave the listing, their records (so the admission answers
-- them as unknown keys) and the key-spend hash, here, so every scan of the account's keys stays
-- bounded without a job of its own. Revoked: the revocation time has come; a key in its grace stays.
-- Each record shares this key's record name but for the hash: the same account, the same slot.
local records = string.sub(KEYS[2], 1, #KEYS[2] - #stored.hash)
-- Each revoked key as a string that sorts as revoked-kept.ts orders them, oldest first (revocation
-- time, then creation time, then id): the plain string sort is several times faster than a Lua
-- comparator, which counts once, on an account that piled up revoked keys before this bound.
local revoked, hash_of = {}, {}
for _, other_raw in ipairs(redis.call('HVALS', KEYS[1])) do
  local other = cjson.decode(other_raw)
  local other_at = other.revokedAt
  if other_at ~= nil and other_at ~= cjson.null and other_at <= now then
    revoked[#revoked + 1] = string.format('%015d%015d', other_at, other.createdAt or 0) .. other.id
    hash_of[other.id] = other.hash
  end
end
local forget = #revoked - tonumber(ARGV[5])
if forget > 0 then
  table.sort(revoked)
  -- In batches: one command for many keys (unpack has a limit on how many values it spreads).
  for first = 1, forget, 1000 do
    local ids, spend_fields, records_gone = {}, {}, {}
    for i = first, math.min(first + 999, forget) do
      local id = string.sub(revoked[i], 31)
      ids[#ids + 1] = id
      -- Both of the key's spend fields (prelude.lua, key_spend).
      spend_fields[#spend_fields + 1] = id
      spend_fields[#spend_fields + 1] = key_periods_field(id)
      records_gone[#records_gone + 1] = records .. hash_of[id]
    end
    redis.call('HDEL', KEYS[1], unpack(ids))
    redis.call('HDEL', KEYS[3], unpack(spend_fields))
    redis.call('DEL', unpack(records_gone))
  end
end
return cjson.encode({ status = 'revoked', key = key })
