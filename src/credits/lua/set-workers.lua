-- Binds an account to its own worker pool, or unbinds it (an empty URL). The binding lives in
-- the account hash, so the admission script returns it with the account at no extra cost.
-- KEYS: account   ARGV: url ('' = unbind)
if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
if ARGV[1] == '' then
  redis.call('HDEL', KEYS[1], 'workers_url')
else
  redis.call('HSET', KEYS[1], 'workers_url', ARGV[1])
end
return cjson.encode(load_account(KEYS[1]))
