//! `cmsgpack` against redis-server 7.0.15's outputs (filled in by `redis_cases.py`).

use crate::libs::testkit::check;

#[test]
fn cmsgpack_cases() {
    check(CASES);
}

const CASES: &[(&str, &str)] = &[
    (
        r#"local h = function(s) return (string.gsub(s, '.', function(c) return string.format('%02x', string.byte(c)) end)) end return h(cmsgpack.pack(0)), h(cmsgpack.pack(127)), h(cmsgpack.pack(128)), h(cmsgpack.pack(255)), h(cmsgpack.pack(256)), h(cmsgpack.pack(65535)), h(cmsgpack.pack(65536)), h(cmsgpack.pack(2^32-1)), h(cmsgpack.pack(2^32))"#,
        r#"true "00" "7f" "cc80" "ccff" "cd0100" "cdffff" "ce00010000" "ceffffffff" "cf0000000100000000""#,
    ),
    (
        r#"return cmsgpack.pack(-1), cmsgpack.pack(-32), cmsgpack.pack(-33), cmsgpack.pack(-128), cmsgpack.pack(-129), cmsgpack.pack(-32768), cmsgpack.pack(-32769), cmsgpack.pack(-2^31), cmsgpack.pack(-2^31-1)"#,
        r#"true "\xff" "\xe0" "\xd0\xdf" "\xd0\x80" "\xd1\xff\x7f" "\xd1\x80\x00" "\xd2\xff\xff\x7f\xff" "\xd2\x80\x00\x00\x00" "\xd3\xff\xff\xff\xff\x7f\xff\xff\xff""#,
    ),
    (
        r#"return cmsgpack.pack(2^63), cmsgpack.pack(-2^63), cmsgpack.pack(2^62), cmsgpack.pack(2^64)"#,
        r#"true "\xca_\x00\x00\x00" "\xd3\x80\x00\x00\x00\x00\x00\x00\x00" "\xcf@\x00\x00\x00\x00\x00\x00\x00" "\xca_\x80\x00\x00""#,
    ),
    (
        r#"return cmsgpack.pack(0.5), cmsgpack.pack(0.1), cmsgpack.pack(1/0), cmsgpack.pack(-1/0), cmsgpack.pack(0/0), cmsgpack.pack(-0.0), cmsgpack.pack(1e300), cmsgpack.pack(3.25)"#,
        r#"true "\xca?\x00\x00\x00" "\xcb?\xb9\x99\x99\x99\x99\x99\x9a" "\xca\x7f\x80\x00\x00" "\xca\xff\x80\x00\x00" "\xcb\xff\xf8\x00\x00\x00\x00\x00\x00" "\x00" "\xcb~7\xe4<\x88\x00u\x9c" "\xca@P\x00\x00""#,
    ),
    (
        r#"return cmsgpack.pack(""), cmsgpack.pack("abc"), cmsgpack.pack(string.rep("x", 31)), cmsgpack.pack(string.rep("y", 32))"#,
        r#"true "\xa0" "\xa3abc" "\xbfxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" "\xd9 yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy""#,
    ),
    (
        r#"return #cmsgpack.pack(string.rep("z", 255)), string.sub(cmsgpack.pack(string.rep("z", 256)), 1, 4), string.sub(cmsgpack.pack(string.rep("z", 65536)), 1, 6)"#,
        r#"true 257 "\xda\x01\x00z" "\xdb\x00\x01\x00\x00z""#,
    ),
    (
        r#"return cmsgpack.pack(true), cmsgpack.pack(false), cmsgpack.pack(nil), cmsgpack.pack(cjson.null), cmsgpack.pack(function() end), cmsgpack.pack(coroutine.create(function() end))"#,
        r#"true "\xc3" "\xc2" "\xc0" "\xc0" "\xc0" "\xc0""#,
    ),
    (
        r#"return cmsgpack.pack({}), cmsgpack.pack({1, 2, 3}), cmsgpack.pack({a = 1}), cmsgpack.pack({[2] = 1}), cmsgpack.pack({1, nil, 3})"#,
        r#"true "\x90" "\x93\x01\x02\x03" "\x81\xa1a\x01" "\x81\x02\x01" "\x82\x01\x01\x03\x03""#,
    ),
    (
        r#"return cmsgpack.pack({[1.5] = 1}), cmsgpack.pack({[-1] = 1}), cmsgpack.pack({[2^31] = 1}), cmsgpack.pack({[true] = false})"#,
        r#"true "\x81\xca?\xc0\x00\x00\x01" "\x81\xff\x01" "\x81\xce\x80\x00\x00\x00\x01" "\x81\xc3\xc2""#,
    ),
    (
        r#"local t = {} for i = 1, 16 do t[i] = i end local m = {} for i = 1, 16 do m["k" .. i] = i end return string.sub(cmsgpack.pack(t), 1, 3), string.sub(cmsgpack.pack(m), 1, 3)"#,
        r#"true "\xdc\x00\x10" "\xde\x00\x10""#,
    ),
    (
        r#"local t = {} for i = 1, 70000 do t[i] = 0 end return string.sub(cmsgpack.pack(t), 1, 5)"#,
        r#"true "\xdd\x00\x01\x11p""#,
    ),
    (
        r#"local t = 1 for i = 1, 20 do t = {t} end return cmsgpack.pack(t)"#,
        r#"true "\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\xc0""#,
    ),
    (
        r#"local t = {} t[1] = t return cmsgpack.pack(t)"#,
        r#"true "\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\xc0""#,
    ),
    (
        r#"return cmsgpack.pack(1, "a", {2}), cmsgpack.pack(nil, nil)"#,
        r#"true "\x01\xa1a\x91\x02" "\xc0\xc0""#,
    ),
    (
        r#"return cmsgpack.pack()"#,
        r#"false "user_script:34: bad argument #0 to 'pack' (MessagePack pack needs input.)""#,
    ),
    (
        r#"local t = {} for i = 1, 4001 do t[i] = i end return cmsgpack.pack(unpack(t))"#,
        r#"false "user_script:34: bad argument #0 to 'pack' (Too many arguments for MessagePack pack.)""#,
    ),
    (
        r#"local t = {} for i = 1, 4000 do t[i] = i end return #cmsgpack.pack(unpack(t))"#,
        r#"true 11618"#,
    ),
    (
        r#"return cmsgpack.unpack(cmsgpack.pack(1, -1, 0.5, "s", true, false, {1, 2}, {a = {b = "c"}}))"#,
        r#"true 1 -1 0.5 "s" true false {1=1,2=2} {"a"={"b"="c"}}"#,
    ),
    (
        r#"return cmsgpack.unpack("\204\255\205\1\0\206\0\1\0\0\207\255\255\255\255\255\255\255\255")"#,
        r#"true 255 256 65536 -1"#,
    ),
    (
        r#"return cmsgpack.unpack("\208\128\209\128\0\210\128\0\0\0\211\128\0\0\0\0\0\0\0\211\255\255\255\255\255\255\255\254")"#,
        r#"true -128 -32768 -2147483648 -9.2233720368547758e+18 -2"#,
    ),
    (
        r#"return cmsgpack.unpack("\202\63\192\0\0\203\63\241\153\153\153\153\153\154")"#,
        r#"true 1.5 1.1000000000000001"#,
    ),
    (
        r#"return cmsgpack.unpack("\217\3abc\218\0\2xy\219\0\0\0\1z\163def")"#,
        r#"true "abc" "xy" "z" "def""#,
    ),
    (
        r#"return cmsgpack.unpack("\220\0\2\1\2\221\0\0\0\1\3\222\0\1\161a\1\223\0\0\0\1\161b\2")"#,
        r#"true {1=1,2=2} {1=3} {"a"=1} {"b"=2}"#,
    ),
    (
        r#"return cmsgpack.unpack("\147\1\192\3")"#,
        r#"true {1=1,3=3}"#,
    ),
    (
        r#"return cmsgpack.unpack("\129\192\1")"#,
        r#"false "table index is nil""#,
    ),
    (r#"return cmsgpack.unpack("\129\1\192")"#, r#"true {}"#),
    (r#"return cmsgpack.unpack("\130\1\2\1\3")"#, r#"true {1=3}"#),
    (
        r#"return cmsgpack.unpack("\193")"#,
        r#"false "user_script:34: Bad data format in input.""#,
    ),
    (
        r#"return cmsgpack.unpack("\196\1a")"#,
        r#"false "user_script:34: Bad data format in input.""#,
    ),
    (
        r#"return cmsgpack.unpack("\212\1\2")"#,
        r#"false "user_script:34: Bad data format in input.""#,
    ),
    (
        r#"return cmsgpack.unpack("\205\1")"#,
        r#"false "user_script:34: Missing bytes in input.""#,
    ),
    (
        r#"return cmsgpack.unpack("\219\255\255\255\255abc")"#,
        r#"false "user_script:34: Missing bytes in input.""#,
    ),
    (
        r#"return cmsgpack.unpack("\221\255\255\255\255\1\2")"#,
        r#"false "user_script:34: Missing bytes in input.""#,
    ),
    (
        r#"return cmsgpack.unpack("\223\255\255\255\255\1")"#,
        r#"false "user_script:34: Missing bytes in input.""#,
    ),
    (
        r#"return cmsgpack.unpack("\163ab")"#,
        r#"false "user_script:34: Missing bytes in input.""#,
    ),
    (r#"return cmsgpack.unpack("")"#, r#"true"#),
    (
        r#"return cmsgpack.unpack()"#,
        r#"false "user_script:34: bad argument #1 to 'unpack' (string expected, got no value)""#,
    ),
    (
        r#"return cmsgpack.unpack({})"#,
        r#"false "user_script:34: bad argument #1 to 'unpack' (string expected, got table)""#,
    ),
    (r#"return cmsgpack.unpack(12)"#, r#"true 49 50"#),
    (r#"return cmsgpack.unpack("\1\2", "extra")"#, r#"true 1 2"#),
    (
        r#"return cmsgpack.unpack_one("\1\2\3"), cmsgpack.unpack_one("\1\2\3", 1), cmsgpack.unpack_one("\1\2\3", 2)"#,
        r#"true 1 2 -1 3"#,
    ),
    (r#"return cmsgpack.unpack_one("\1\2\3", 3)"#, r#"true -1"#),
    (
        r#"return cmsgpack.unpack_one("\1\2\3", 4)"#,
        r#"false "user_script:34: Start offset 4 greater than input length 3.""#,
    ),
    (
        r#"return cmsgpack.unpack_one("\1\2\3", -1)"#,
        r#"false "user_script:34: Invalid request to unpack with offset of -1 and limit of 3.""#,
    ),
    (
        r#"return cmsgpack.unpack_one("\1\2\3", "x")"#,
        r#"false "user_script:34: bad argument #2 to 'unpack_one' (number expected, got string)""#,
    ),
    (r#"return cmsgpack.unpack_one("", 0)"#, r#"true -1"#),
    (
        r#"return cmsgpack.unpack_limit("\1\2\3\4", 2), cmsgpack.unpack_limit("\1\2\3\4", 2, 2)"#,
        r#"true 2 -1 3 4"#,
    ),
    (
        r#"return cmsgpack.unpack_limit("\1\2\3\4", 0)"#,
        r#"true 1 2 3 4"#,
    ),
    (
        r#"return cmsgpack.unpack_limit("\1\2\3\4", 0, 1)"#,
        r#"true 1"#,
    ),
    (
        r#"return cmsgpack.unpack_limit("\1\2\3\4", 10, 1)"#,
        r#"true -1 2 3 4"#,
    ),
    (
        r#"return cmsgpack.unpack_limit("\1\2\3\4", -1)"#,
        r#"false "user_script:34: Invalid request to unpack with offset of 0 and limit of 4.""#,
    ),
    (
        r#"return cmsgpack.unpack_limit("\1\2\3\4")"#,
        r#"false "user_script:34: bad argument #2 to 'unpack_limit' (number expected, got no value)""#,
    ),
    (
        r#"return cmsgpack.unpack_limit("\1\2\3\4", 1.9, 0.5)"#,
        r#"true 1 1"#,
    ),
    (
        r#"return cmsgpack.unpack_one("\145\1\2")"#,
        r#"true 2 {1=1}"#,
    ),
    (
        r#"return select('#', cmsgpack.unpack(string.rep("\1", 7000)))"#,
        r#"true 7000"#,
    ),
    (
        r#"return select('#', cmsgpack.unpack(string.rep("\1", 8000)))"#,
        r#"false "user_script:34: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)""#,
    ),
    (
        r#"return select('#', cmsgpack.unpack(string.rep("\1", 7000), 1, 2)), select('#', cmsgpack.unpack(string.rep("\161a", 7000)))"#,
        r#"true 7000 7000"#,
    ),
    (
        r#"local t = cmsgpack.unpack(string.rep("\145", 3998) .. "\1") local d = 0 while type(t) == "table" do d = d + 1 t = t[1] end return d, t"#,
        r#"true 3998 1"#,
    ),
    (
        r#"return cmsgpack.unpack(string.rep("\145", 4000) .. "\1")"#,
        r#"false "user_script:34: stack overflow (in function mp_decode_to_lua_array)""#,
    ),
    (
        r#"local t = cmsgpack.unpack(string.rep("\129\1", 3998) .. "\1") local d = 0 while type(t) == "table" do d = d + 1 t = t[1] end return d, t"#,
        r#"true 3998 1"#,
    ),
    (
        r#"return cmsgpack.unpack(string.rep("\129\1", 4000) .. "\1")"#,
        r#"false "user_script:34: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)""#,
    ),
    (
        r#"return cmsgpack.unpack(string.rep("\129", 3998) .. "\1\1")"#,
        r#"false "user_script:34: Missing bytes in input.""#,
    ),
    (
        r#"return cmsgpack.unpack(string.rep("\129", 8000) .. "\1")"#,
        r#"false "user_script:34: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)""#,
    ),
    (
        r#"local t = {} for i = 1, 20000 do t['k' .. i] = i end local s = cmsgpack.pack(t) return #s, string.sub(s, 1, 8), cmsgpack.unpack(s).k777"#,
        r#"true 188515 "\xdeN \xa6k145" 777"#,
    ),
    (
        r#"local t = {} for i = 1, 20000 do t[i] = {i, "s" .. i} end local s = cmsgpack.pack(t) return #s, cmsgpack.unpack(s)[19999][2]"#,
        r#"true 208515 "s19999""#,
    ),
    (
        r#"return cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION"#,
        r#"true "cmsgpack" "lua-cmsgpack 0.4.0" "Copyright (C) 2012, Salvatore Sanfilippo" "MessagePack C implementation for Lua""#,
    ),
    (
        r#"local t = {} for k in pairs(cmsgpack) do t[#t + 1] = k end table.sort(t) return table.concat(t, " ")"#,
        r#"true "_COPYRIGHT _DESCRIPTION _NAME _VERSION pack unpack unpack_limit unpack_one""#,
    ),
    (
        r#"local p = cmsgpack.pack return pcall(p)"#,
        r#"true false "bad argument #0 to '?' (MessagePack pack needs input.)""#,
    ),
    (
        r#"local t = cmsgpack.unpack(string.rep("\129", 2000) .. "\1" .. string.rep("\1", 2000)) local d = 0 while type(t) == "table" do d = d + 1 local k = next(t) t = k end return d, t"#,
        r#"true 2000 1"#,
    ),
    (
        r#"return cmsgpack.unpack("\129\145\1\2"), cmsgpack.unpack("\130\161a\192\161b\1")"#,
        r#"true {{1=1}=2} {"b"=1}"#,
    ),
    (
        r#"return cmsgpack.unpack_limit("\1\2", 1, 1), cmsgpack.unpack_limit("\1\2", 1, 2)"#,
        r#"true -1 -1"#,
    ),
    (
        r#"return cmsgpack.unpack("\203\127\248\0\0\0\0\0\1\202\255\128\0\0")"#,
        r#"true nan -inf"#,
    ),
    (
        r#"local seed = 12345 local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648 return math.floor(seed / 65536) % n end local function pick(t) return t[rnd(#t) + 1] end local h = 0 local function mix(ok, ...) local r = tostring(ok) for i = 1, select('#', ...) do r = r .. "|" .. render((select(i, ...))) end for k = 1, #r do h = (h * 31 + string.byte(r, k)) % 1000000007 end end local a = {0, 1, 127, 128, 129, 130, 143, 144, 145, 146, 159, 160, 161, 163, 191, 192, 193, 194, 195, 196, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 217, 218, 219, 220, 221, 222, 223, 224, 255, 65, 0, 0, 255} for i = 1, 3000 do local b = {} for j = 1, rnd(16) do b[j] = string.char(pick(a)) end local s = table.concat(b) local k = rnd(3) if k == 0 then mix(pcall(cmsgpack.unpack, s)) elseif k == 1 then mix(pcall(cmsgpack.unpack_one, s, rnd(#s + 2) - 1)) else mix(pcall(cmsgpack.unpack_limit, s, rnd(4) - 1, rnd(#s + 2) - 1)) end end return h"#,
        r#"true 510741322"#,
    ),
    (
        r#"local seed = 12345 local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648 return math.floor(seed / 65536) % n end local function pick(t) return t[rnd(#t) + 1] end local h = 0 local function mix(ok, ...) local r = tostring(ok) for i = 1, select('#', ...) do r = r .. "|" .. render((select(i, ...))) end for k = 1, #r do h = (h * 31 + string.byte(r, k)) % 1000000007 end end local function gen(d) local c = rnd(8) if c == 0 then return rnd(100000) - 50000 elseif c == 1 then return (rnd(2000000) - 1000000) / (rnd(999) + 1) elseif c == 2 then return string.rep(string.char(rnd(256)), rnd(40)) elseif c == 3 then return rnd(2) == 1 elseif c == 4 then return 2 ^ (rnd(140) - 70) * (rnd(3) - 1) elseif d < 5 then local t = {} for i = 1, rnd(6) do local k = rnd(3) if k == 0 then t[#t + 1] = gen(d + 1) elseif k == 1 then t[rnd(8) + 1] = gen(d + 1) else t["k" .. rnd(10)] = gen(d + 1) end end return t else return nil end end for i = 1, 1500 do local v = gen(0) local ok, s = pcall(cmsgpack.pack, v, gen(3)) mix(ok, s) if ok then mix(pcall(cmsgpack.unpack, s)) end end return h"#,
        r#"true 708577376"#,
    ),
];

/// Shared subtables describe more output than they hold: packing stops at the output cap
/// (Redis's server would run out of memory instead).
#[test]
fn pack_output_is_capped() {
    let lua = crate::libs::testkit::lua();
    let body = "local s = string.rep('x', 2^20) local t = {s, s, s, s} \
                for i = 1, 8 do t = {t, t, t, t} end return pcall(cmsgpack.pack, t)";
    assert_eq!(
        crate::libs::testkit::run(&lua, body),
        r#"true false "not enough memory""#
    );
}
