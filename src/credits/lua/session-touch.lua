-- KEYS: session, the account's session epoch   ARGV: now (ms), idle lifetime (ms; empty: read only)
-- Reads a dashboard session and pushes its idle expiry back, never past its absolute expiry. A
-- session older than the account's last "sign out everywhere" (an older epoch) or past its
-- absolute expiry is ended here, in the same step, so no request can slip between check and use.
local fields = redis.call('HGETALL', KEYS[1])
if #fields == 0 then return false end
local s = {}
for i = 1, #fields, 2 do s[fields[i]] = fields[i + 1] end
local now = tonumber(ARGV[1])
local epoch = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(s.expires_at) <= now or tonumber(s.epoch) ~= epoch then
  redis.call('DEL', KEYS[1])
  return false
end
if ARGV[2] ~= '' then
  redis.call('PEXPIRE', KEYS[1], math.min(tonumber(ARGV[2]), tonumber(s.expires_at) - now))
end
return cjson.encode(s)
