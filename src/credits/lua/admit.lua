-- The hot path in one round trip: key check and its account controls, Free allowance, rate limit, debit.
-- (prelude.lua admit_call, whose keys and arguments are listed there)
return cjson.encode(admit_call())
