-- KEYS: key list (hash id -> JSON)   ARGV: key id, grace ms, key record key prefix
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return nil end
local key = cjson.decode(raw)
local at = now_ms() + tonumber(ARGV[2])
if key.revokedAt ~= cjson.null and key.revokedAt ~= nil and key.revokedAt < at then at = key.revokedAt end
key.revokedAt = at
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(key))
redis.call('HSET', KEYS[2], 'revoked_at', at)
return cjson.encode(key)
