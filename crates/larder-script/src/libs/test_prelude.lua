-- Renders what a test case returns as one line of text, the same way in redis-server and
-- in larder's tests: strings quoted with non-printable bytes as \xHH, numbers with %.17g,
-- tables with their entries sorted, cjson.null as null.
local function render(v)
  local t = type(v)
  if t == "string" then
    local s = string.gsub(v, '[\\"]', '\\%0')
    s = string.gsub(s, '[^ -~]', function(c) return string.format("\\x%02x", string.byte(c)) end)
    return '"' .. s .. '"'
  elseif t == "number" then
    return string.format("%.17g", v)
  elseif t == "table" then
    local parts = {}
    for k, x in pairs(v) do parts[#parts + 1] = render(k) .. "=" .. render(x) end
    table.sort(parts)
    return "{" .. table.concat(parts, ",") .. "}"
  elseif v == cjson.null then
    return "null"
  elseif t == "nil" or t == "boolean" then
    return tostring(v)
  end
  return t
end

local function run(f)
  local function join(...)
    local out = {}
    for i = 1, select('#', ...) do out[i] = render((select(i, ...))) end
    return table.concat(out, " ")
  end
  return join(pcall(f))
end
