-- KEYS: key list (key id -> JSON), the key's record
-- ARGV: key id, grace ms, keep one active (1/0), the replacing key's id ('' = not a rotation)
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
return cjson.encode({ status = 'revoked', key = key })
