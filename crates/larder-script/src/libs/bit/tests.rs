//! `bit` against redis-server 7.0.15's outputs (filled in by `redis_cases.py`).

use crate::libs::testkit::check;

#[test]
fn bit_cases() {
    check(CASES);
}

const CASES: &[(&str, &str)] = &[
    (
        r#"return bit.tobit(0xffffffff), bit.tobit(2^32 + 5), bit.tobit(-1), bit.tobit(1.5), bit.tobit(2.5)"#,
        r#"true -1 5 -1 2 2"#,
    ),
    (
        r#"return bit.tobit(-1.5), bit.tobit(2^52), bit.tobit(2^53 + 3), bit.tobit(1e300), bit.tobit(-1e300)"#,
        r#"true -2 0 2 -2013235812 -2013235812"#,
    ),
    (
        r#"return bit.tobit(0/0), bit.tobit(1/0), bit.tobit(-1/0), bit.tobit(-0)"#,
        r#"true 0 0 0 0"#,
    ),
    (
        r#"return bit.tobit("0x10"), bit.tobit("  12  "), bit.tobit("1e3")"#,
        r#"true 16 12 1000"#,
    ),
    (
        r#"return bit.tobit("abc")"#,
        r#"false "user_script:34: bad argument #1 to 'tobit' (number expected, got string)""#,
    ),
    (
        r#"return bit.tobit()"#,
        r#"false "user_script:34: bad argument #1 to 'tobit' (number expected, got no value)""#,
    ),
    (
        r#"return bit.tobit({})"#,
        r#"false "user_script:34: bad argument #1 to 'tobit' (number expected, got table)""#,
    ),
    (
        r#"return bit.bnot(0), bit.bnot(-1), bit.bnot(0x12345678)"#,
        r#"true -1 0 -305419897"#,
    ),
    (
        r#"return bit.band(0xff00, 0x0ff0), bit.band(-1, 7, 3), bit.band(5)"#,
        r#"true 3840 3 5"#,
    ),
    (
        r#"return bit.bor(1, 2, 4, 8, 0x80000000), bit.bor(0)"#,
        r#"true -2147483633 0"#,
    ),
    (
        r#"return bit.bxor(0xff, 0x0f), bit.bxor(1, 1, 1)"#,
        r#"true 240 1"#,
    ),
    (
        r#"return bit.band(1, nil, "x")"#,
        r#"false "user_script:34: bad argument #3 to 'band' (number expected, got string)""#,
    ),
    (
        r#"return bit.band(1, "x", 3)"#,
        r#"false "user_script:34: bad argument #2 to 'band' (number expected, got string)""#,
    ),
    (
        r#"return bit.band()"#,
        r#"false "user_script:34: bad argument #1 to 'band' (number expected, got no value)""#,
    ),
    (
        r#"return bit.lshift(1, 0), bit.lshift(1, 31), bit.lshift(1, 32), bit.lshift(1, 33), bit.lshift(1, -1)"#,
        r#"true 1 -2147483648 1 2 -2147483648"#,
    ),
    (
        r#"return bit.rshift(-1, 1), bit.rshift(0x80000000, 31), bit.rshift(256, 36)"#,
        r#"true 2147483647 1 16"#,
    ),
    (
        r#"return bit.arshift(-256, 4), bit.arshift(0x80000000, 31), bit.arshift(256, 4)"#,
        r#"true -16 -1 16"#,
    ),
    (
        r#"return bit.rol(0x12345678, 4), bit.rol(0x12345678, 0), bit.rol(1, 32), bit.rol(0x80000000, 1)"#,
        r#"true 591751041 305419896 1 1"#,
    ),
    (
        r#"return bit.ror(0x12345678, 4), bit.ror(1, 1), bit.ror(1, 0)"#,
        r#"true -2128394905 -2147483648 1"#,
    ),
    (
        r#"return bit.bswap(0x12345678), bit.bswap(-1), bit.bswap(0xff)"#,
        r#"true 2018915346 -1 -16777216"#,
    ),
    (
        r#"return bit.tohex(255), bit.tohex(-1), bit.tohex(0x12345678, 4), bit.tohex(255, -4)"#,
        r#"true "000000ff" "ffffffff" "5678" "00FF""#,
    ),
    (
        r#"return bit.tohex(255, 0), bit.tohex(255, 12), bit.tohex(255, -12), bit.tohex(1, -2147483648)"#,
        r#"true "" "000000ff" "000000FF" "00000001""#,
    ),
    (
        r#"return bit.tohex(255, "x")"#,
        r#"false "user_script:34: bad argument #2 to 'tohex' (number expected, got string)""#,
    ),
    (
        r#"return bit.tohex(255, nil)"#,
        r#"false "user_script:34: bad argument #2 to 'tohex' (number expected, got nil)""#,
    ),
    (
        r#"return bit.lshift(1)"#,
        r#"false "user_script:34: bad argument #2 to 'lshift' (number expected, got no value)""#,
    ),
    (
        r#"local b = bit.band return b(nil)"#,
        r#"false "user_script:34: bad argument #1 to 'b' (number expected, got nil)""#,
    ),
    (
        r#"return pcall(bit.bnot, "y")"#,
        r#"true false "bad argument #1 to '?' (number expected, got string)""#,
    ),
    (
        r#"local t = {} for k in pairs(bit) do t[#t + 1] = k end table.sort(t) return table.concat(t, " ")"#,
        r#"true "arshift band bnot bor bswap bxor lshift rol ror rshift tobit tohex""#,
    ),
    (
        r#"local seed = 12345 local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648 return math.floor(seed / 65536) % n end local function pick(t) return t[rnd(#t) + 1] end local h = 0 local function mix(ok, ...) local r = tostring(ok) for i = 1, select('#', ...) do r = r .. "|" .. render((select(i, ...))) end for k = 1, #r do h = (h * 31 + string.byte(r, k)) % 1000000007 end end local nums = {0, 1, -1, 2^31, 2^32, 2^52, 2^53, -2^31, 0.5, 1.5, 2.5, -0.5, -1.5, 1e300, 1/0, 0/0, "0x7f", "12", 3, 31, 32, 33, -33} local ops = {'tobit', 'bnot', 'band', 'bor', 'bxor', 'lshift', 'rshift', 'arshift', 'rol', 'ror', 'bswap', 'tohex'} for i = 1, 4000 do local x = pick(nums) if rnd(4) == 0 then x = (rnd(2^31) - 2^30) * (rnd(2) == 1 and 1 or 3.75) end mix(pcall(bit[pick(ops)], x, pick(nums), pick(nums))) end return h"#,
        r#"true 102425196"#,
    ),
];
