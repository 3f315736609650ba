-- Model allow-lists (the mirror of @gateway/catalog's model-allow-list.ts, held to the same table of
-- cases by a test): a list holds model ids and `prefix*` patterns; a model is allowed when EVERY
-- list allows it (no list: every model; an empty list: none). Plain string comparison, never Lua
-- patterns, so `.`, `%` and the like in an id are only themselves.

-- Whether one list (a Lua array of strings) allows the model id.
local function listAllows(list, model)
  for _, entry in ipairs(list) do
    if string.sub(entry, -1) == '*' then
      local prefix = string.sub(entry, 1, -2)
      if string.sub(model, 1, #prefix) == prefix then return true end
    elseif entry == model then
      return true
    end
  end
  return false
end

-- Whether every list of `lists` allows the model id.
local function modelAllowed(lists, model)
  for _, list in ipairs(lists) do
    if not listAllows(list, model) then return false end
  end
  return true
end
