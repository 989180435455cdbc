-- KEYS: the relayer's nonce sequence (the next nonce to hand out)
-- ARGV: op ("take" | "raise" | "peek" | "give"), value
-- take: hands out the next nonce, starting the sequence at ARGV[2] when it does not exist yet;
--       with no ARGV[2] and no sequence, answers false (the caller reads the chain's count first).
-- peek: the next nonce the sequence would hand out (false when there is no sequence).
-- raise: moves the sequence forward to ARGV[2] (a resync with the chain); never backwards.
-- give: hands nonce ARGV[2] back (its transaction was refused by the node, so never sent) when it
--       is still the last one handed out; answers 1 if so, else 0 (a later nonce was taken since).
local current = redis.call('GET', KEYS[1])
if ARGV[1] == 'peek' then return current and tonumber(current) or false end
if ARGV[1] == 'raise' then
  if not current or tonumber(current) < tonumber(ARGV[2]) then redis.call('SET', KEYS[1], ARGV[2]) end
  return tonumber(redis.call('GET', KEYS[1]))
end
if ARGV[1] == 'give' then
  if current and tonumber(current) == tonumber(ARGV[2]) + 1 then
    redis.call('SET', KEYS[1], ARGV[2])
    return 1
  end
  return 0
end
if not current then
  if ARGV[2] == nil or ARGV[2] == '' then return false end
  redis.call('SET', KEYS[1], ARGV[2])
end
return redis.call('INCR', KEYS[1]) - 1
