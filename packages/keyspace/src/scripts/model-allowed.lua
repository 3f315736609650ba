-- The decision script's allow-list matcher (lib/model-allow-list.lua) on its own, for tests that
-- hold it to the TypeScript matcher's cases. ARGV: the lists (JSON array of arrays), the model.
-- Returns 1 when every list allows the model, else 0.
return modelAllowed(cjson.decode(ARGV[1]), ARGV[2]) and 1 or 0
