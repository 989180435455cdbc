-- KEYS: the account's custom tools   ARGV: tool name, record (JSON), cap
-- Lives beside the ledger scripts because it shares their loader: one name per account, at most `cap` tools.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 'exists' end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 'cap' end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 'added'
