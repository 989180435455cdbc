-- KEYS: the process's open calls   ARGV: request id
-- Closed by its process, unless a survivor took it first (then it was refunded: the process
-- must not answer it as served).
local value = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[1], ARGV[1])
if value == 'taken' then return 'taken' end
return 'closed'
