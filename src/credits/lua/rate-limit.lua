-- KEYS: log   ARGV: limit, window ms, member
local allowed, remaining, reset = rate_limit(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], now_ms())
return cjson.encode({ allowed = allowed, limit = tonumber(ARGV[1]), remaining = remaining, resetMs = reset })
