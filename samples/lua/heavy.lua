-- heavy.lua: a longer deterministic Lua workload (about 1-2 s under qemu-arm), so
-- benchmark ratios measure the instrumentation rather than qemu's start-up.
-- Same rules as bench.lua: no time, no math.random, nothing order-dependent printed.

local function lcg(seed)
  local state = seed
  return function(n)
    state = (state * 1103515245 + 12345) % 2147483648
    return (state // 256) % n
  end
end
local rand = lcg(7)

local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end
print("fib(24) = " .. fib(24))

local nums = {}
for i = 1, 30000 do nums[i] = rand(1000000) end
table.sort(nums, function(a, b) return a > b end)
local checksum = 0
for i = 1, #nums do checksum = (checksum * 31 + nums[i]) % 1000000007 end
print(string.format("sort: n=%d first=%d last=%d checksum=%d", #nums, nums[1], nums[#nums], checksum))

local parts = {}
for i = 1, 20000 do parts[#parts + 1] = string.format("%d:%x", i, (i * 2654435761) % 4294967296) end
local text = table.concat(parts, ",")
local digits = select(2, text:gsub("%d", ""))
local words = 0
for _ in text:gmatch("[^,]+") do words = words + 1 end
print(string.format("strings: len=%d digits=%d words=%d", #text, digits, words))

local map = {}
for i = 1, 40000 do map["k" .. rand(5000)] = i end
local n, total = 0, 0
for _, v in pairs(map) do n = n + 1; total = total + v end
print(string.format("map: entries=%d total=%d", n, total))

local s, f = 0, 0.0
for i = 1, 400000 do
  s = s + (i * i) % 7
  f = f + 1.0 / i
end
print(string.format("arith: s=%d harmonic=%.6f", s, f))
