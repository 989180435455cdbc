-- KEYS: log   ARGV: limit, window ms, member, count (hits admitted all or none; 1 when absent)
local allowed, remaining, reset = rate_limit(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], now_ms(), tonumber(ARGV[4] or '1'))
return cjson.encode({ allowed = allowed, limit = tonumber(ARGV[1]), remaining = remaining, resetMs = reset })
