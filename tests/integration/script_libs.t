#!/usr/bin/python3
# script_libs.t — the Lua libraries of scripts (cjson, cmsgpack, struct,
# bit: zarisd/script/lualibs.c, lib_cmsgpack.c, lib_struct.c) against
# Redis 7.0's: a corpus of snippets, each run with EVAL on redis-server and
# on zarisd, the raw RESP replies compared byte for byte.
#
# Most snippets return one string built by the prelude's helpers: hex() of
# the bytes a packer made, dump() of what an unpacker or decoder returned
# (tables with sorted keys, numbers with 17 digits), try() turning a Lua
# error into "err:<message>" — so that a difference shows the library, not
# the engine's reply conversion. The "raw" group returns library values
# directly (tables, numbers, cjson.null) and so also checks how they reach
# the client; the "error" group lets an error escape to EVAL.
#
# Before zarisd has EVAL (the engine lives on another branch), the corpus
# runs on redis-server alone, each snippet checked to answer as its group
# expects, and the comparison is skipped; once the engine's sources are in
# the tree, a zarisd without EVAL is a failure.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

PRELUDE = r"""
local function hex(s)
  return (string.gsub(s, '.', function(c) return string.format('%02x', string.byte(c)) end))
end
local function dump(v, depth)
  depth = depth or 0
  local t = type(v)
  if v == cjson.null then return 'null' end
  if t == 'string' then return string.format('%q', v) end
  if t == 'number' then return string.format('%.17g', v) end
  if t ~= 'table' then return t == 'boolean' and tostring(v) or t end
  if depth > 40 then return '{...}' end
  -- Entries sorted as text: deterministic, never by an address.
  local out = {}
  for k, x in pairs(v) do out[#out + 1] = '[' .. dump(k, depth + 1) .. ']=' .. dump(x, depth + 1) end
  table.sort(out)
  return '{' .. table.concat(out, ',') .. '}'
end
local function all(...)
  local out = {}
  for i = 1, select('#', ...) do out[i] = dump((select(i, ...))) end
  return select('#', ...) .. ':' .. table.concat(out, ',')
end
local function try(f, ...)
  local r = {pcall(f, ...)}
  if not r[1] then return 'err:' .. tostring(r[2]) end
  return 'ok:' .. all(unpack(r, 2, table.maxn(r)))
end
local NAMES = {'encode', 'decode', 'encode_sparse_array', 'encode_max_depth', 'decode_max_depth',
  'encode_number_precision', 'encode_keep_buffer', 'encode_invalid_numbers', 'decode_invalid_numbers',
  'new', 'null', '_NAME', '_VERSION', 'pack', 'unpack', 'unpack_one', 'unpack_limit', 'size',
  'tobit', 'tohex', 'bnot', 'band', 'bor', 'bxor', 'lshift', 'rshift', 'arshift', 'rol', 'ror', 'bswap',
  'safe', 'encode_empty_table_as_object', 'decode_array_with_array_mt', 'empty_array'}
local function keys(t)
  -- By name, not with pairs(): a sandbox may hand scripts a proxy table.
  local out = {}
  for _, k in ipairs(NAMES) do if t[k] ~= nil then out[#out + 1] = k .. '=' .. type(t[k]) end end
  return table.concat(out, ' ')
end
"""

# (group, name, body). Groups: "str" returns one string through the prelude
# (the same on a bare state, see the unit test), "raw" returns library
# values as they are, "error" raises out of the script.
CORPUS = [
    # --- what is there -------------------------------------------------------
    ("str", "globals", r"""return type(cjson) .. type(cmsgpack) .. type(struct) .. type(bit)"""),
    ("str", "cjson api", r"""return keys(cjson) .. ' ' .. cjson._NAME .. ' ' .. cjson._VERSION"""),
    ("str", "struct api", r"""return keys(struct)"""),
    ("str", "bit api", r"""return keys(bit)"""),
    ("str", "cmsgpack api", r"""return keys(cmsgpack) .. ' ' .. cmsgpack._NAME .. ' ' .. cmsgpack._VERSION"""),
    ("str", "cjson defaults", r"""return all(cjson.encode_number_precision()) .. ' ' .. all(cjson.encode_sparse_array())
.. ' ' .. all(cjson.encode_max_depth()) .. ' ' .. all(cjson.decode_max_depth())
.. ' ' .. all(cjson.encode_invalid_numbers()) .. ' ' .. all(cjson.decode_invalid_numbers())
.. ' ' .. all(cjson.encode_keep_buffer())"""),

    # --- cmsgpack: integers ---------------------------------------------------
    ("str", "mp ints positive", r"""return hex(cmsgpack.pack(0, 1, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296))"""),
    ("str", "mp ints negative", r"""return hex(cmsgpack.pack(-1, -32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649))"""),
    ("str", "mp ints wide", r"""return hex(cmsgpack.pack(2^53, -2^53, 2^62, -2^63, 2^63, 2^64, -2^64))"""),
    # --- cmsgpack: floats -----------------------------------------------------
    ("str", "mp floats", r"""return hex(cmsgpack.pack(0.5, 0.1, -1.5, 1/0, -1/0, 1e300, 3.4028234663852886e38, 1e-45, 2^63 + 2^20))"""),
    ("str", "mp nan", r"""return hex(cmsgpack.pack(0/0))"""),
    ("str", "mp negative zero", r"""return hex(cmsgpack.pack(-0.0))"""),
    # --- cmsgpack: strings, booleans, nil, others --------------------------------
    ("str", "mp strings", r"""local out = {}
for _, n in ipairs({0, 1, 31, 32, 255, 256, 65535, 65536}) do
  local s = cmsgpack.pack(string.rep('x', n))
  out[#out + 1] = hex(s:sub(1, 6)) .. '/' .. #s
end
return table.concat(out, ' ')"""),
    ("str", "mp binary string", r"""return hex(cmsgpack.pack('a\0b\255'))"""),
    ("str", "mp booleans nil", r"""return hex(cmsgpack.pack(true, false, nil))"""),
    ("str", "mp other types", r"""return hex(cmsgpack.pack(function() end, cjson.null, 1))"""),
    # --- cmsgpack: tables ----------------------------------------------------
    ("str", "mp empty table", r"""return hex(cmsgpack.pack({}))"""),
    ("str", "mp arrays", r"""return hex(cmsgpack.pack({1, 2, 3}, {'a', {true}}, {[1] = 1, [2] = 2}))"""),
    ("str", "mp array 16", r"""local t = {} for i = 1, 16 do t[i] = i end return hex(cmsgpack.pack(t))"""),
    ("str", "mp array 65536", r"""local t = {} for i = 1, 65536 do t[i] = 0 end
local s = cmsgpack.pack(t) return hex(s:sub(1, 6)) .. '/' .. #s"""),
    ("str", "mp maps", r"""return hex(cmsgpack.pack({a = 1}, {[0] = 1}, {[1.5] = 1}, {[-1] = 'x'}, {[true] = false}))"""),
    ("str", "mp holes", r"""return hex(cmsgpack.pack({1, nil, 3}, {[1] = 1, [3] = 3}, {[2] = 2}))"""),
    ("str", "mp key past int", r"""return hex(cmsgpack.pack({[2^31] = 1}, {[2^31 - 1] = 1}))"""),
    ("str", "mp map order", r"""local t = {} for i = 1, 20 do t['k' .. i] = i end return hex(cmsgpack.pack(t))"""),
    ("str", "mp mixed table", r"""return hex(cmsgpack.pack({1, 2, x = 'y'}))"""),
    ("str", "mp nesting limit", r"""local t = {} local c = t
for i = 1, 20 do c[1] = {} c = c[1] end
return hex(cmsgpack.pack(t))"""),
    ("str", "mp cycle array", r"""local t = {} t[1] = t return hex(cmsgpack.pack(t))"""),
    ("str", "mp cycle map", r"""local t = {} t.a = t return hex(cmsgpack.pack(t))"""),
    ("str", "mp no input", r"""return try(cmsgpack.pack)"""),
    # --- cmsgpack: unpack -----------------------------------------------------
    ("str", "mp roundtrip", r"""return all(cmsgpack.unpack(cmsgpack.pack(1, -1, 0.5, 'abc', true, false,
  {1, 2, {3, 'x'}}, {a = {b = 'c'}}, 2^40, -2^40, 1e300)))"""),
    ("str", "mp unpack nil", r"""return all(cmsgpack.unpack(cmsgpack.pack(nil, 1)))"""),
    ("str", "mp unpack uint64", r"""return all(cmsgpack.unpack('\207\128\0\0\0\0\0\0\0', '\207\0\0\0\1\0\0\0\0'))"""),
    ("str", "mp unpack uint64 both", r"""return all(cmsgpack.unpack('\207\128\0\0\0\0\0\0\0\207\0\0\0\1\0\0\0\0'))"""),
    ("str", "mp unpack int64", r"""return all(cmsgpack.unpack('\211\255\255\255\255\255\255\255\255\211\128\0\0\0\0\0\0\0'))"""),
    ("str", "mp unpack small ints", r"""return all(cmsgpack.unpack('\204\200\205\255\255\206\255\255\255\255\208\128\209\128\0\210\128\0\0\0\224\127'))"""),
    ("str", "mp unpack floats", r"""return all(cmsgpack.unpack('\202\63\192\0\0\203\63\185\153\153\153\153\153\154'))"""),
    ("str", "mp unpack str8 16 32", r"""return all(cmsgpack.unpack('\217\3abc\218\0\2de\219\0\0\0\1f'))"""),
    ("str", "mp unpack array16 map16", r"""return all(cmsgpack.unpack('\220\0\2\1\2\222\0\1\161a\2\221\0\0\0\1\3\223\0\0\0\1\1\1'))"""),
    ("str", "mp unpack empty", r"""return all(cmsgpack.unpack(''))"""),
    ("str", "mp unpack number arg", r"""return all(cmsgpack.unpack(123))"""),
    ("str", "mp unpack bad arg", r"""return try(cmsgpack.unpack, nil)"""),
    ("str", "mp unpack no arg", r"""return try(cmsgpack.unpack)"""),
    ("str", "mp unpack c1", r"""return try(cmsgpack.unpack, '\1\193')"""),
    ("str", "mp unpack bin8", r"""return try(cmsgpack.unpack, '\196\1a')"""),
    ("str", "mp unpack ext", r"""return try(cmsgpack.unpack, '\212\1\1')"""),
    ("str", "mp unpack truncated int", r"""return try(cmsgpack.unpack, '\205\1')"""),
    ("str", "mp unpack truncated str", r"""return try(cmsgpack.unpack, '\163ab')"""),
    ("str", "mp unpack truncated str32", r"""return try(cmsgpack.unpack, '\219\0\0\0\9abc')"""),
    ("str", "mp unpack truncated array", r"""return try(cmsgpack.unpack, '\147\1\2')"""),
    ("str", "mp unpack truncated map", r"""return try(cmsgpack.unpack, '\130\1\2\3')"""),
    ("str", "mp unpack nil key", r"""return try(cmsgpack.unpack, '\129\192\1')"""),
    ("str", "mp unpack nan key", r"""return try(cmsgpack.unpack, '\129\203\255\248\0\0\0\0\0\0\1')"""),
    ("str", "mp unpack many values", r"""local ok, e = pcall(function() return select('#', cmsgpack.unpack(string.rep('\1', 7000))) end)
local ok2, e2 = pcall(function() return select('#', cmsgpack.unpack(string.rep('\1', 9000))) end)
return tostring(ok) .. ' ' .. tostring(e) .. ' ' .. tostring(ok2) .. ' ' .. tostring(e2)"""),
    ("str", "mp unpack deep", r"""return try(cmsgpack.unpack, string.rep('\145', 10000) .. '\1')"""),
    ("str", "mp unpack deep map", r"""return try(cmsgpack.unpack, string.rep('\129\1', 10000) .. '\1')"""),
    ("str", "mp unpack_one truncated", r"""return try(cmsgpack.unpack_one, '\1\205\1', 1)"""),
    ("str", "mp pack many args", r"""local t = {} for i = 1, 3000 do t[i] = i end
local s = cmsgpack.pack(unpack(t)) return #s .. ' ' .. hex(s:sub(-6))"""),
    ("str", "mp pack too many args", r"""local t = {} for i = 1, 5000 do t[i] = i end
return try(cmsgpack.pack, unpack(t))"""),
    ("str", "mp string keys", r"""return hex(cmsgpack.pack({['1'] = 1}, {[1] = 'a', ['2'] = 'b'}))"""),
    ("str", "mp metatable", r"""local t = setmetatable({1, 2}, {__index = function() return 9 end})
local m = setmetatable({}, {__index = {a = 1}})
return hex(cmsgpack.pack(t, m))"""),
    ("str", "mp unpack nested 100", r"""local v = cmsgpack.unpack(string.rep('\145', 100) .. '\7')
local d = 0 while type(v) == 'table' do v = v[1] d = d + 1 end return d .. ' ' .. v"""),
    ("str", "mp unpack_one", r"""local s = cmsgpack.pack(1, {2}, 'three')
return all(cmsgpack.unpack_one(s)) .. ' ' .. all(cmsgpack.unpack_one(s, 1)) .. ' ' .. all(cmsgpack.unpack_one(s, 3))
.. ' ' .. all(cmsgpack.unpack_one(s, #s))"""),
    ("str", "mp unpack_one offset past", r"""return try(cmsgpack.unpack_one, cmsgpack.pack(1, 2), 3)"""),
    ("str", "mp unpack_one negative", r"""return try(cmsgpack.unpack_one, cmsgpack.pack(1, 2, 3), -1)"""),
    ("str", "mp unpack_one inside value", r"""return try(cmsgpack.unpack_one, cmsgpack.pack('abc'), 1)"""),
    ("str", "mp unpack_one bad offset", r"""return try(cmsgpack.unpack_one, '\1', 'x')"""),
    ("str", "mp unpack_limit", r"""local s = cmsgpack.pack(1, 2, 3, 4)
return all(cmsgpack.unpack_limit(s, 2)) .. ' ' .. all(cmsgpack.unpack_limit(s, 2, 2)) .. ' ' .. all(cmsgpack.unpack_limit(s, 9))
.. ' ' .. all(cmsgpack.unpack_limit(s, 0)) .. ' ' .. all(cmsgpack.unpack_limit(s, 0, 1)) .. ' ' .. all(cmsgpack.unpack_limit(s, 1, 4))"""),
    ("str", "mp unpack_limit negative", r"""return try(cmsgpack.unpack_limit, '\1\2', -1)"""),
    ("str", "mp unpack_limit no limit", r"""return try(cmsgpack.unpack_limit, '\1\2')"""),
    ("str", "mp unpack_limit float limit", r"""return all(cmsgpack.unpack_limit('\1\2\3', 1.9))"""),

    # --- struct: pack ---------------------------------------------------------
    ("str", "st endian", r"""return hex(struct.pack('>i2<i2', 258, 258)) .. ' ' .. hex(struct.pack('>I4 <I4 I4', 1, 1, 1))"""),
    ("str", "st all ints", r"""return hex(struct.pack('bBhHlLTiI', -1, 255, -2, 65534, -3, 3, 7, -4, 4))"""),
    ("str", "st sized ints", r"""return hex(struct.pack('>i3 I1 i5 I7 <i6', -2, 1, -3, 2^50, -5))"""),
    ("str", "st wide ints", r"""return hex(struct.pack('>I16', 1)) .. ' ' .. hex(struct.pack('<i16', -1)) .. ' ' .. hex(struct.pack('>i9', -2))"""),
    ("str", "st int overflow", r"""return hex(struct.pack('>I1 >i2 >i4 I8 i8 >I4 b', 256, 70000, 2^40, 2^64, -2^64, -1, 200))"""),
    ("str", "st int big values", r"""return hex(struct.pack('>I8 >I8 >i8', 2^63, 2^63 + 2^12, -2^63))"""),
    ("str", "st int fractions", r"""return hex(struct.pack('b b i i', 3.7, -3.7, 0.5, -0.5))"""),
    ("str", "st int nan inf", r"""return hex(struct.pack('>i8 >I8 >i8', 0/0, 1/0, -1/0))"""),
    ("str", "st i0", r"""return hex(struct.pack('i0 b', 5, 6))"""),
    ("str", "st floats", r"""return hex(struct.pack('>f >d <f <d', 1.5, 0.1, 1.5, 0.1)) .. ' ' .. hex(struct.pack('f', 0.1))"""),
    ("str", "st align", r"""return hex(struct.pack('!4 b i4 b h', 1, 2, 3, 4)) .. ' ' .. hex(struct.pack('!2 b d', 1, 0))
.. ' ' .. hex(struct.pack('! b d', 1, 0)) .. ' ' .. hex(struct.pack('!8 b i3 b i3 b l', 1, 2, 3, 4, 5, 6))"""),
    ("str", "st align chars", r"""return hex(struct.pack('!4 b c3 i4 s i2', 1, 'abc', 2, 'xy', 3))"""),
    ("str", "st strings", r"""return hex(struct.pack('s', 'ab')) .. ' ' .. hex(struct.pack('c3', 'abcd')) .. ' ' .. hex(struct.pack('c0', 'hello'))
.. ' ' .. hex(struct.pack('s c2 c', 'x', 'yz', 'q')) .. ' ' .. hex(struct.pack('s', 12))"""),
    ("str", "st padding", r"""return hex(struct.pack('bxb xx', 1, 2)) .. ' ' .. hex(struct.pack('  >  h  ', 1))"""),
    ("str", "st huge char count", r"""return try(struct.pack, 'c4000000000', 'x') .. ' ' .. try(struct.unpack, 'c4000000000', 'x')"""),
    ("str", "st string too short", r"""return try(struct.pack, 'c5', 'abc')"""),
    ("str", "st string too short 2", r"""return try(struct.pack, 'b c5', 1, 'abc')"""),
    ("str", "st equals option", r"""return try(struct.pack, '=i', 1)"""),
    ("str", "st unknown option", r"""return try(struct.pack, 'q', 1)"""),
    ("str", "st bad alignment", r"""return try(struct.pack, '!3 i', 1) .. ' ' .. try(struct.pack, '!0 i', 1)"""),
    ("str", "st int size limit", r"""return try(struct.pack, 'i33', 1) .. ' ' .. try(struct.size, 'I40')"""),
    ("str", "st int size overflow", r"""return try(struct.pack, 'i99999999999', 1)"""),
    ("str", "st pack bad number", r"""return try(struct.pack, 'i', 'x') .. ' ' .. try(struct.pack, 'i')"""),
    ("str", "st pack bad string", r"""return try(struct.pack, 's', {})"""),
    ("str", "st pack bad format", r"""return try(struct.pack, nil)"""),
    ("str", "st pack empty", r"""return all(struct.pack(''))"""),
    # --- struct: size ---------------------------------------------------------
    ("str", "st size", r"""return all(struct.size('bBhHlLTiIfdx'), struct.size('!4 b i4'), struct.size('!8 b d'), struct.size('b i4'),
  struct.size('c10 i7'), struct.size('q z'), struct.size(''), struct.size('!2 b h b'))"""),
    ("str", "st size errors", r"""return try(struct.size, 's') .. ' ' .. try(struct.size, 'c0') .. ' ' .. try(struct.size, '=')
.. ' ' .. try(struct.size, '!5')"""),
    # --- struct: unpack -------------------------------------------------------
    ("str", "st unpack ints", r"""return all(struct.unpack('>i2 I2 <i2 <I2 b B', '\255\254\0\5\254\255\5\0\255\255'))"""),
    ("str", "st unpack native", r"""return all(struct.unpack('hHlLTiI', struct.pack('hHlLTiI', -1, 2, -3, 4, 5, -6, 7)))"""),
    ("str", "st unpack sized", r"""return all(struct.unpack('>i3 <I3 >I7 >i1', '\255\255\254\1\2\3\1\2\3\4\5\6\7\128'))"""),
    ("str", "st unpack wide", r"""local s = string.rep('\0', 8) .. '\128' .. string.rep('\0', 7)
return all(struct.unpack('>i16', s)) .. ' ' .. all(struct.unpack('>I16', s)) .. ' ' .. all(struct.unpack('<i16', s))
.. ' ' .. all(struct.unpack('>i9', '\1\255\255\255\255\255\255\255\255')) .. ' ' .. all(struct.unpack('>i12', string.rep('\255', 12)))"""),
    ("str", "st unpack i0", r"""return all(struct.unpack('i0 b', '\9'))"""),
    ("str", "st unpack uint64", r"""return all(struct.unpack('>I8 >i8', string.rep('\255', 16)))"""),
    ("str", "st unpack floats", r"""return all(struct.unpack('>d <f', struct.pack('>d <f', 0.1, 0.1)))"""),
    ("str", "st unpack align", r"""return all(struct.unpack('!4 b i4 h', struct.pack('!4 b i4 h', 1, 2, 3)))"""),
    ("str", "st unpack strings", r"""return all(struct.unpack('s', 'ab\0cd')) .. ' ' .. all(struct.unpack('c2', 'abcd')) .. ' ' .. all(struct.unpack('b c0 b', '\3abc\7'))"""),
    ("str", "st unpack c0 no size", r"""return try(struct.unpack, 'c0', 'abc') .. ' ' .. try(struct.unpack, 'c2 c0', 'abcd')"""),
    ("str", "st unpack c0 too long", r"""return try(struct.unpack, 'b c0', '\9ab')"""),
    ("str", "st unpack unfinished", r"""return try(struct.unpack, 's', 'ab')"""),
    ("str", "st unpack short", r"""return try(struct.unpack, 'i4', 'ab') .. ' ' .. try(struct.unpack, 'bbb', 'ab')"""),
    ("str", "st unpack offsets", r"""return all(struct.unpack('b', 'abc', 3)) .. ' ' .. all(struct.unpack('', 'abc', 2)) .. ' ' .. all(struct.unpack('', 'abc', 4))"""),
    ("str", "st unpack offset zero", r"""return try(struct.unpack, 'b', 'abc', 0)"""),
    ("str", "st unpack offset negative", r"""return try(struct.unpack, 'b', 'abc', -1)"""),
    ("str", "st unpack offset past", r"""return try(struct.unpack, 'b', 'abc', 4) .. ' ' .. try(struct.unpack, '', 'abc', 9)"""),
    ("str", "st unpack bad option", r"""return try(struct.unpack, 'z', 'abc') .. ' ' .. try(struct.unpack, '=b', 'a')"""),
    ("str", "st unpack no data", r"""return try(struct.unpack, 'b')"""),
    ("str", "st roundtrip", r"""local f = '<!4 b h i l B H I L f d s c3 x i8'
local p = struct.pack(f, -7, -300, -70000, -5e9, 7, 300, 70000, 5e9, 0.25, 1/3, 'zero\1', 'abc', -2^40)
return #p .. ' ' .. all(struct.unpack(f, p))"""),

    # --- bit ------------------------------------------------------------------
    ("str", "bit basics", r"""return all(bit.tobit(0xffffffff), bit.tobit(2^32 + 5), bit.bnot(0), bit.bor(1, 2, 4), bit.band(0xff, 0x0f, 0x3c),
  bit.bxor(5, 3), bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(0x12345678, 12),
  bit.ror(0x12345678, 12), bit.bswap(0x12345678), bit.lshift(1, 33))"""),
    ("str", "bit tohex", r"""return all(bit.tohex(-1), bit.tohex(255, 4), bit.tohex(255, -4), bit.tohex(0x1234, 2), bit.tohex(1.5))"""),
    ("str", "bit fractions", r"""return all(bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-1.5), bit.tobit(2^52 + 1))"""),
    ("str", "bit errors", r"""return try(bit.band, 'x') .. ' ' .. try(bit.bor) .. ' ' .. try(bit.tohex, {})"""),
    ("str", "bit string numbers", r"""return all(bit.band('7', '3'))"""),

    # --- cjson: encode ----------------------------------------------------------
    ("str", "json arrays", r"""return cjson.encode({1, 2, 3}) .. ' ' .. cjson.encode({{}, {1, {2}}}) .. ' ' .. cjson.encode({})"""),
    ("str", "json object", r"""return cjson.encode({a = 1}) .. ' ' .. cjson.encode({a = {b = {true, false}}}) .. ' ' .. cjson.encode({[1] = 'x', [2] = 'y', z = 1}):len()"""),
    ("str", "json object order", r"""local t = {} for i = 1, 12 do t['k' .. i] = i end return cjson.encode(t)"""),
    ("str", "json numbers", r"""return cjson.encode({0.1, 1/3, 1e20, 1e-7, 123456789012345, 12345678901234567, -0.0, 2^53, 3.14159265358979, 100, -5})"""),
    ("str", "json strings", r"""return cjson.encode({'"\\/\n\r\t\b\f', '\1\31\127', 'caf\195\169', '\0x'})"""),
    ("str", "json scalars", r"""return cjson.encode(cjson.null) .. cjson.encode(true) .. cjson.encode(false) .. cjson.encode('s') .. cjson.encode(7)"""),
    ("str", "json sparse", r"""return cjson.encode({[1] = 1, [5] = 5}) .. ' ' .. try(cjson.encode, {[20] = 1}) .. ' ' .. cjson.encode({[1] = 1, [3] = 3})"""),
    ("str", "json nonnumeric keys", r"""return cjson.encode({[1.5] = 1}) .. ' ' .. try(cjson.encode, {[true] = 1}) .. ' ' .. cjson.encode({[-1] = 1})"""),
    ("str", "json invalid numbers", r"""return try(cjson.encode, 0/0) .. ' ' .. try(cjson.encode, {1/0}) .. ' ' .. try(cjson.encode, -1/0)"""),
    ("str", "json unsupported", r"""return try(cjson.encode, function() end) .. ' ' .. try(cjson.encode, {f = string.len})"""),
    ("str", "json depth", r"""local t = {} local c = t for i = 1, 1000 do c[1] = {} c = c[1] end
local ok = pcall(cjson.encode, t)
local t2 = {} c = t2 for i = 1, 998 do c[1] = {} c = c[1] end
return tostring(ok) .. ' ' .. #cjson.encode(t2)"""),
    ("str", "json cycle", r"""local t = {} t[1] = t return try(cjson.encode, t)"""),
    ("str", "json no arg", r"""return try(cjson.encode)"""),
    # --- cjson: decode ----------------------------------------------------------
    ("str", "json decode", r"""return dump(cjson.decode('{"a":[1,2,{"b":null}],"c":"x\\u00e9","d":true,"e":-1.5e3}'))"""),
    ("str", "json decode unicode", r"""return hex(cjson.decode('"\\ud83d\\ude00\\u0000\\/"'))"""),
    ("str", "json decode numbers", r"""return dump(cjson.decode('[1e400, -1e400, 0.1, 12345678901234567890, 1E2, -0]'))"""),
    ("str", "json decode invalid numbers", r"""return dump(cjson.decode('[0x10, 1]')) .. ' ' .. try(cjson.decode, 'nan') .. ' ' .. try(cjson.decode, 'inf') .. ' ' .. try(cjson.decode, '[Infinity]')"""),
    ("str", "json decode scalars", r"""return all(cjson.decode('7'), cjson.decode('"s"'), cjson.decode('null'), cjson.decode('false'), cjson.decode(' [ ] '))"""),
    ("str", "json decode errors", r"""return try(cjson.decode, '[1,2') .. ' | ' .. try(cjson.decode, '') .. ' | ' .. try(cjson.decode, '{"a" 1}')
.. ' | ' .. try(cjson.decode, '[1] x') .. ' | ' .. try(cjson.decode, '"\\x"') .. ' | ' .. try(cjson.decode, '{1:2}')"""),
    ("str", "json decode bad arg", r"""return try(cjson.decode, {}) .. ' | ' .. try(cjson.decode) .. ' | ' .. all(cjson.decode(12))"""),
    ("str", "json decode depth", r"""return try(cjson.decode, string.rep('[', 1001) .. string.rep(']', 1001)) .. ' | '
.. #cjson.encode(cjson.decode(string.rep('[', 999) .. string.rep(']', 999)))"""),
    ("str", "json decode control char", r"""return try(cjson.decode, '"a\1b"')"""),
    ("str", "json errors with position", r"""local function f(g, ...) local r = g(...) return r end
local out = {}
for _, c in ipairs({{cjson.decode, '{'}, {cjson.encode, 0/0}, {cjson.encode, {[20] = 1}}, {cjson.decode, {}}}) do
  local ok, e = pcall(function() local r = c[1](c[2]) return r end)
  out[#out + 1] = e
end
local ok, e = pcall(function() local r = cjson.encode(1, 2) return r end) out[#out + 1] = e
ok, e = pcall(function() local r = cjson.decode() return r end) out[#out + 1] = e
ok, e = pcall(function() local r = cjson.new().decode('[') return r end) out[#out + 1] = e
return table.concat(out, ' | ')"""),
    ("str", "struct msgpack errors with position", r"""local out = {}
local ok, e = pcall(function() local r = struct.pack('=') return r end) out[#out + 1] = e
ok, e = pcall(function() local r = cmsgpack.unpack('\193') return r end) out[#out + 1] = e
ok, e = pcall(function() local r = cmsgpack.pack() return r end) out[#out + 1] = e
ok, e = pcall(function() local r = struct.unpack('i4', 'x') return r end) out[#out + 1] = e
return table.concat(out, ' | ')"""),
    ("str", "json new instance", r"""local j = cjson.new() return j.encode({1, 0.1}) .. ' ' .. all(j.encode_number_precision())"""),
    ("str", "json roundtrip msgpack", r"""local v = cjson.decode('{"list":[1,2,3],"name":"n","ok":true}')
return dump(cmsgpack.unpack(cmsgpack.pack(v)))"""),

    # --- values straight to the client -----------------------------------------
    ("raw", "raw msgpack table", r"""return cmsgpack.unpack(cmsgpack.pack({1, 2, {3, 'x'}, 2.5}))"""),
    ("raw", "raw msgpack multi", r"""return {cmsgpack.unpack(cmsgpack.pack(1, 'a', true, false))}"""),
    ("raw", "raw json array", r"""return cjson.decode('[1,"a",[true],2.9,null,3]')"""),
    ("raw", "raw json null", r"""return cjson.decode('null')"""),
    ("raw", "raw struct", r"""return {struct.unpack('>i2 s', '\0\5ab\0')}"""),
    ("raw", "raw bit", r"""return bit.bor(1, 2, 4)"""),
    ("raw", "raw pack bytes", r"""return cmsgpack.pack({1, 2}, 'x', 0.5)"""),
    ("raw", "raw struct bytes", r"""return struct.pack('>I4 d s', 1, 0.1, 'z')"""),

    # --- errors escaping to EVAL ------------------------------------------------
    ("error", "error msgpack", r"""return cmsgpack.unpack('\193')"""),
    ("error", "error struct", r"""return struct.pack('=')"""),
    ("error", "error json", r"""return cjson.decode('{')"""),
]


# --- a seeded sweep: random inputs for the unpackers and packers ------------
MP_TYPE_BYTES = [0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3, 0xca, 0xcb, 0xd9, 0xda, 0xdb, 0xdc, 0xdd,
                 0xde, 0xdf, 0x92, 0x82, 0xa3, 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xd4]
ST_OPTIONS = list("bBhHlLTiIfdxsc<>! ") + ["i3", "I5", "i9", "I16", "c0", "c2", "!4", "!2", "!8", "=", "z"]
NUMBERS = ["0", "1", "-1", "127", "128", "-33", "255", "65536", "2^31", "-2^31", "2^32", "2^53", "2^63",
           "-2^63", "2^64", "0.5", "0.1", "-3.7", "1/0", "-1/0", "1e300", "3.5e38"]


def lua_bytes(b):
    return "'" + "".join("\\%d" % x for x in b) + "'"


def random_msgpack(rng):
    """A few type bytes each followed by a few payload bytes: valid values,
    truncated ones and bad formats alike."""
    out = bytearray()
    for _ in range(rng.randint(1, 4)):
        out.append(rng.choice(MP_TYPE_BYTES) if rng.random() < 0.6 else rng.randrange(256))
        out += bytes(rng.choice([0, 1, 2, 128, 255, rng.randrange(256)]) for _ in range(rng.randint(0, 10)))
    return bytes(out)


def random_value(rng, depth=0):
    """A Lua expression: a number, string, boolean, nil, or a table mixing
    array items and keyed fields."""
    r = rng.random()
    if depth < 4 and r < 0.3:
        items = []
        for _ in range(rng.randint(0, 6)):
            if rng.random() < 0.5:
                items.append(random_value(rng, depth + 1))
            else:
                key = rng.choice(["[%s]" % rng.choice(NUMBERS), "k%d" % rng.randint(0, 20), "[%d]" % rng.randint(-1, 8),
                                  "['%d']" % rng.randint(1, 3), "[true]"])
                items.append(key + "=" + random_value(rng, depth + 1))
        return "{" + ",".join(items) + "}"
    if r < 0.7:
        return rng.choice(NUMBERS)
    if r < 0.85:
        return "'" + "x" * rng.choice([0, 1, 31, 32, 255, 256]) + "'"
    return rng.choice(["true", "false", "nil", "cjson.null"])


def random_snippets(rng, n):
    out = []
    for i in range(n):
        kind = i % 3
        if kind == 0:
            b = lua_bytes(random_msgpack(rng))
            off = rng.choice([0, 1, 2])
            out.append("return try(function() return all(cmsgpack.unpack(%s)) end) .. ' ' .. "
                       "try(function() return all(cmsgpack.unpack_limit(%s, %d, %d)) end)"
                       % (b, b, rng.randint(0, 3), off))
        elif kind == 1:
            fmt = "".join(rng.choice(ST_OPTIONS) for _ in range(rng.randint(1, 6)))
            data = lua_bytes(bytes(rng.randrange(256) for _ in range(rng.randint(0, 40))))
            args = ",".join(rng.choice(NUMBERS + ["'ab'", "'12'"]) for _ in range(6))
            out.append("return try(function() return hex(struct.pack(%r, %s)) end) .. ' ' .. "
                       "try(function() return all(struct.unpack(%r, %s, %d)) end) .. ' ' .. "
                       "try(function() return struct.size(%r) end)" % (fmt, args, fmt, data, rng.choice([1, 1, 2, 5]), fmt))
        else:
            vs = ",".join(random_value(rng) for _ in range(rng.randint(1, 3)))
            out.append("return try(function() local s = cmsgpack.pack(%s) return hex(s) .. ' ' .. "
                       "all(cmsgpack.unpack(s)) end) .. ' ' .. try(function() return cjson.encode({%s}) end)"
                       % (vs, vs))
    return out


def script(body):
    return PRELUDE + body


def engine_in_tree():
    """True when the tree holds the scripting engine (files of
    zarisd/script/ besides this library's own)."""
    mine = {"lualibs.h", "lualibs.c", "lib_cmsgpack.c", "lib_struct.c"}
    d = os.path.join(REPO, "zarisd", "script")
    return os.path.isdir(d) and any(f not in mine for f in os.listdir(d))


def group_ok(group, reply):
    """Does REPLY answer as snippets of GROUP must?"""
    if group == "str":
        return reply.kind == "$" and reply.value is not None
    if group == "error":
        return reply.is_error()
    return not reply.is_error()


def main():
    redis = start_redis()
    rc = redis.client()
    z = start_zarisd()
    zc = z.client()
    probe = zc.call("EVAL", "return 1", "0")
    has_eval = not probe.is_error()
    if not has_eval:
        note("zarisd answers EVAL with %r" % (probe.value,))
    compare = has_eval or engine_in_tree()

    for group, name, body in CORPUS:
        want = rc.call("EVAL", script(body), "0")
        if not ok(group_ok(group, want), "redis: %s answers as a %s snippet" % (name, group)):
            diag("    redis: %r" % (want.raw[:300],))
        if not compare:
            continue
        got = zc.call("EVAL", script(body), "0")
        if not is_(got.raw, want.raw, "zarisd == redis: %s" % name):
            pass
    rng = seeded_rng()
    rounds = sweep_size("ZARIS_SCRIPT_LIBS_ROUNDS", 300, 90)
    first_bad, strings = None, 0
    for body in random_snippets(rng, rounds):
        want = rc.call("EVAL", script(body), "0")
        strings += want.kind == "$" and want.value is not None
        if compare and first_bad is None:
            got = zc.call("EVAL", script(body), "0")
            if got.raw != want.raw:
                first_bad = (body, want.raw, got.raw)
    is_(strings, rounds, "redis: every random snippet answers a string")
    if compare:
        if not ok(first_bad is None, "zarisd == redis on %d random snippets" % rounds):
            diag("    snippet: %s\n    redis:  %r\n    zarisd: %r" % first_bad)
    else:
        note("comparison with zarisd skipped: no scripting engine in this tree yet")
    # A corpus that proves nothing: the string snippets must not all answer alike.
    distinct = {rc.call("EVAL", script(b), "0").raw for g, n, b in CORPUS if g == "str"}
    ok(len(distinct) > len(CORPUS) // 2, "the corpus's answers differ (%d distinct)" % len(distinct))
    done_testing()


if __name__ == "__main__":
    main()
