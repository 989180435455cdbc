-- KEYS: the account's outbox   ARGV: the ids of the events handed on
-- Deletes those events from the outbox (found by their `id` field), in one step with reading it.
local wanted = {}
for _, id in ipairs(ARGV) do wanted[id] = true end
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
return #gone
