-- A short deterministic Lua workload for exact instruction counting under the
-- single-stepping oracle: closures, tables, strings, a sort.
local function lcg(seed) return function() seed = (seed * 1103515245 + 12345) % 2147483648; return seed end end
local r = lcg(7)
local t = {}
for i = 1, 200 do t[i] = r() % 1000 end
table.sort(t)
local acc = 0
for i, v in ipairs(t) do acc = acc + v * i end
local parts = {}
for i = 1, 50 do parts[#parts + 1] = string.format("%d:%x", i, t[i]) end
local s = table.concat(parts, ",")
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
print(acc, #s, s:sub(1, 20), fib(15), string.rep("ab", 3):upper())
