-- KEYS: the process's open calls, the processes' heartbeats   ARGV: process id, now (ms)
-- A silent process's open calls, each taken once across every survivor: those that may still be
-- refunded are returned and left marked 'taken' (so the process, if it was only stalled, learns
-- its call was refunded); the others are forgotten (a retry with the call's Idempotency-Key
-- takes its debit over). The marks expire after an hour, as the process's calls do.
local taken = {}
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local value = fields[i + 1]
  if value ~= 'taken' then
    local charge = cjson.decode(value)
    if tonumber(charge.refundUntil) > tonumber(ARGV[2]) then
      redis.call('HSET', KEYS[1], fields[i], 'taken')
      taken[#taken + 1] = value
    else
      redis.call('HDEL', KEYS[1], fields[i])
    end
  end
end
redis.call('ZREM', KEYS[2], ARGV[1])
return taken
