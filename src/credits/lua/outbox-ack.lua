-- KEYS: the account's outbox, its event log
-- ARGV: how many log entries to keep ('' = all), the number n of records to log, n (time, record)
--       pairs, then the ids of the events handed on
-- Logs the records (a sorted set: one event logged twice is one member) and deletes the events
-- handed on from the outbox (found by their `id` field), in one step. Returns how many events
-- are still waiting in the outbox.
local keep = ARGV[1]
local logged = tonumber(ARGV[2])
if logged > 0 then
  local members = {}
  for i = 3, 2 + 2 * logged do members[#members + 1] = ARGV[i] end
  redis.call('ZADD', KEYS[2], unpack(members))
  if keep ~= '' then redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -(tonumber(keep) + 1)) end
end
local wanted = {}
for i = 3 + 2 * logged, #ARGV do wanted[ARGV[i]] = true end
local gone = {}
for _, entry in ipairs(redis.call('XRANGE', KEYS[1], '-', '+')) do
  local fields = entry[2]
  for i = 1, #fields, 2 do
    if fields[i] == 'id' then
      if wanted[fields[i + 1]] then gone[#gone + 1] = entry[1] end
      break
    end
  end
end
if #gone > 0 then redis.call('XDEL', KEYS[1], unpack(gone)) end
return redis.call('XLEN', KEYS[1])
