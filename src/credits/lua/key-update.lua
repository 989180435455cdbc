-- KEYS: key list (key id -> JSON), the key's record
-- ARGV: key id, changes (JSON object of KeyRecord fields), then the record's control fields as
--       name/value pairs (what the admission reads: expires_at, tools, budget, budget_period)
-- A key's name and account controls change in one step: the listing's copy and the record the
-- admission script reads never disagree.
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return nil end
local key = cjson.decode(raw)
for field, value in pairs(cjson.decode(ARGV[2])) do key[field] = value end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(key))
local fields = {}
for i = 3, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[2], unpack(fields))
return 'ok'
