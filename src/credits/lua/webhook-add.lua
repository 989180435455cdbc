-- KEYS: the owner's webhooks   ARGV: webhook id, record (JSON), cap
-- Lives beside the ledger scripts because it shares their loader; it only caps a hash.
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
