-- KEYS: an e-mail address's claim   ARGV: the claim as read, the new claim
-- Takes a dead sign-up's claim over only if it is still the one read: of two sign-ups taking over
-- the same claim, the second finds it changed (src/store/accounts/redis.ts claimEmail).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
