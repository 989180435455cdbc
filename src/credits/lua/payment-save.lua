-- KEYS: the payment's record, the set of payments not yet settled
-- ARGV: payment id, record (JSON), its state, when a settled record expires (ms epoch, or '')
-- A settled record is kept for its retention window only and leaves the open set; any other
-- state stays open until it is finished (the reconciler reads the open set).
if ARGV[4] ~= '' then
  redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[4])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
if ARGV[3] == 'settled' then
  redis.call('SREM', KEYS[2], ARGV[1])
else
  redis.call('SADD', KEYS[2], ARGV[1])
end
return 1
