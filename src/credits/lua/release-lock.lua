-- KEYS: lock   ARGV: token — deletes the lock only if this holder still has it.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
