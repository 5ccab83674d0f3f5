-- bench.lua: a small deterministic workload for the Lua interpreter sample.
--
-- No os.time, no math.random: pseudo-random numbers come from an own LCG.  Lua
-- seeds its string hash with time() and addresses, so the iteration order of
-- pairs() over string keys may differ between runs: nothing printed here depends
-- on it (keys are sorted first, or only order-free sums are printed).

local function lcg(seed)
  local state = seed
  return function(n)
    state = (state * 1103515245 + 12345) % 2147483648
    return (state // 256) % n  -- drop the low bits: they are weak in a 2^k LCG
  end
end

-- 1. Recursion.
local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end
print("fib(18) = " .. fib(18))

-- 2. Table sorts, with and without a comparator closure.
local rand = lcg(42)
local nums = {}
for i = 1, 2000 do nums[i] = rand(100000) end
local copy = {}
for i = 1, #nums do copy[i] = nums[i] end
table.sort(nums)
table.sort(copy, function(a, b) return a > b end)
local ok = true
for i = 1, #nums do
  if nums[i] ~= copy[#copy - i + 1] then ok = false end
end
local checksum = 0
for i = 1, #nums do checksum = (checksum * 31 + nums[i]) % 1000000007 end
print(string.format("sort: n=%d min=%d max=%d checksum=%d agree=%s",
  #nums, nums[1], nums[#nums], checksum, tostring(ok)))

-- 3. String operations.
local words = {}
for i = 1, 300 do
  local len = 3 + rand(6)
  local chars = {}
  for j = 1, len do chars[j] = string.char(97 + rand(26)) end
  words[i] = table.concat(chars)
end
local text = table.concat(words, " ")
local upper = text:upper()
local vowels = select(2, text:gsub("[aeiou]", ""))
local counts = {}
for w in text:gmatch("%a+") do
  local first = w:sub(1, 1)
  counts[first] = (counts[first] or 0) + 1
end
local letters = {}
for k in pairs(counts) do letters[#letters + 1] = k end
table.sort(letters)
local summary = {}
for _, k in ipairs(letters) do summary[#summary + 1] = k .. counts[k] end
print(string.format("strings: len=%d vowels=%d upper_has_lower=%s",
  #text, vowels, tostring(upper:find("%l") ~= nil)))
print("first letters: " .. table.concat(summary, ","))
print("reversed: " .. words[1]:reverse() .. " " .. string.rep("ab", 3, "-"))

-- 4. Closures: counters and a small pipeline of composed functions.
local function counter()
  local n = 0
  return function(step) n = n + (step or 1); return n end
end
local c1, c2 = counter(), counter()
for i = 1, 1000 do c1(); c2(i % 3) end
local function compose(f, g) return function(x) return f(g(x)) end end
local pipeline = function(x) return x end
for i = 1, 10 do
  local k = i
  pipeline = compose(function(x) return (x * 3 + k) % 10007 end, pipeline)
end
local acc = 0
for i = 1, 2000 do acc = (acc + pipeline(i)) % 1000003 end
print(string.format("closures: c1=%d c2=%d pipeline=%d", c1(0), c2(0), acc))

-- 5. A hash table with integer and string keys (order-free totals only).
local map = {}
for i = 1, 3000 do map["key" .. rand(1000)] = i end
local n, total = 0, 0
for _, v in pairs(map) do n = n + 1; total = total + v end
print(string.format("map: entries=%d total=%d", n, total))

-- 6. Integer and float arithmetic.
local s, f = 0, 0.0
for i = 1, 20000 do
  s = s + (i * i) % 7
  f = f + 1.0 / i
end
print(string.format("arith: s=%d harmonic=%.6f int_div=%d float=%.3f", s, f, 17 // 5, 2 ^ 0.5))
