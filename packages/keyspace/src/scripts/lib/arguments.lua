-- The script's arguments, passed as name/value pairs (ARGV: name, value, name, value, ...), so a
-- script reads args.<name> and its caller builds them from named fields (see ../arguments.ts).
local args = {}
for i = 1, #ARGV, 2 do args[ARGV[i]] = ARGV[i + 1] end
