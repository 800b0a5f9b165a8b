//! `structs` against redis-server 7.0.15's outputs (filled in by `redis_cases.py`).

use crate::libs::testkit::check;

#[test]
fn structs_cases() {
    check(CASES);
}

const CASES: &[(&str, &str)] = &[
    (
        r#"return struct.pack("b", -1), struct.pack("B", 255), struct.pack("h", -2), struct.pack("H", 65535), struct.pack("i", 1), struct.pack(">i", 1), struct.pack("l", -1), struct.pack("T", 3)"#,
        r#"true "\xff" "\xff" "\xfe\xff" "\xff\xff" "\x01\x00\x00\x00" "\x00\x00\x00\x01" "\xff\xff\xff\xff\xff\xff\xff\xff" "\x03\x00\x00\x00\x00\x00\x00\x00""#,
    ),
    (
        r#"return struct.pack(">I2", 258), struct.pack("<I3", 0x010203), struct.pack(">i3", -1), struct.pack("i16", -1), struct.pack(">i9", 1)"#,
        r#"true "\x01\x02" "\x03\x02\x01" "\xff\xff\xff" "\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00" "\x00\x00\x00\x00\x00\x00\x00\x00\x01""#,
    ),
    (
        r#"return struct.pack("B", 256), struct.pack("b", 200), struct.pack("h", 70000), struct.pack("B", -1), struct.pack("I", 1.9), struct.pack("i", -1.9)"#,
        r#"true "\x00" "\xc8" "p\x11" "\xff" "\x01\x00\x00\x00" "\xff\xff\xff\xff""#,
    ),
    (
        r#"return struct.pack("<I8", 2^64), struct.pack("<I8", 0/0), struct.pack("<i8", -2^70), struct.pack("<I8", 2^63), struct.pack("<L", 2^53 + 1)"#,
        r#"true "\x00\x00\x00\x00\x00\x00\x00\x00" "\x00\x00\x00\x00\x00\x00\x00\x80" "\x00\x00\x00\x00\x00\x00\x00\x80" "\x00\x00\x00\x00\x00\x00\x00\x80" "\x00\x00\x00\x00\x00\x00 \x00""#,
    ),
    (
        r#"return struct.pack("f", 1.5), struct.pack(">f", 1.5), struct.pack("d", 0.1), struct.pack(">d", -2), struct.pack("f", 1e40), struct.pack("f", 0.1)"#,
        r#"true "\x00\x00\xc0?" "?\xc0\x00\x00" "\x9a\x99\x99\x99\x99\x99\xb9?" "\xc0\x00\x00\x00\x00\x00\x00\x00" "\x00\x00\x80\x7f" "\xcd\xcc\xcc=""#,
    ),
    (
        r#"return struct.pack("c3", "abcdef"), struct.pack("c0", "xyz"), struct.pack("c", "q"), struct.pack("s", "hi"), struct.pack("s", "")"#,
        r#"true "abc" "xyz" "q" "hi\x00" "\x00""#,
    ),
    (
        r#"return struct.pack("c5", "ab")"#,
        r#"false "user_script:34: bad argument #3 to 'pack' (string too short)""#,
    ),
    (
        r#"return struct.pack("i", "x")"#,
        r#"false "user_script:34: bad argument #2 to 'pack' (number expected, got string)""#,
    ),
    (
        r#"return struct.pack("i")"#,
        r#"false "user_script:34: bad argument #2 to 'pack' (number expected, got nil)""#,
    ),
    (
        r#"return struct.pack("i", "12"), struct.pack("c2", 123)"#,
        r#"true "\x0c\x00\x00\x00" "12""#,
    ),
    (
        r#"return struct.pack("z", 1)"#,
        r#"false "user_script:34: bad argument #1 to 'pack' (invalid format option 'z')""#,
    ),
    (
        r#"return struct.pack("i33", 1)"#,
        r#"false "user_script:34: integral size 33 is larger than limit of 32""#,
    ),
    (
        r#"return struct.pack("i0", 5), struct.pack("c1i", "a", 1), struct.pack("!c1i", "a", 1), struct.pack("!2c1i", "a", 1), struct.pack("!c1d", "a", 1)"#,
        r#"true "" "a\x01\x00\x00\x00" "a\x00\x00\x00\x01\x00\x00\x00" "a\x00\x01\x00\x00\x00" "a\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0?""#,
    ),
    (
        r#"return struct.pack("!3i", 1)"#,
        r#"false "user_script:34: alignment 3 is not a power of 2""#,
    ),
    (
        r#"return struct.pack("!0i", 1)"#,
        r#"false "user_script:34: alignment 0 is not a power of 2""#,
    ),
    (
        r#"return struct.pack("!16bd", 1, 2), struct.pack("!4c1i8", "a", 1), struct.pack("! b h", 1, 2)"#,
        r#"true "\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00@" "a\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00" "\x01\x00\x02\x00""#,
    ),
    (
        r#"return struct.pack("i99999999999", 1)"#,
        r#"false "user_script:34: integral size overflow""#,
    ),
    (
        r#"return struct.pack("x b x", 7), struct.pack("bxxh", 1, 2), struct.pack("<>h", 1)"#,
        r#"true "\x00\x07\x00" "\x01\x00\x00\x02\x00" "\x00\x01""#,
    ),
    (
        r#"return struct.pack("b\0b", 1, 2), struct.pack("")"#,
        r#"true "\x01" """#,
    ),
    (
        r#"return struct.pack("3", 1)"#,
        r#"false "user_script:34: bad argument #1 to 'pack' (invalid format option '3')""#,
    ),
    (
        r#"return struct.unpack("b", "\255"), struct.unpack("B", "\255"), struct.unpack("<h", "\1\2"), struct.unpack(">h", "\1\2"), struct.unpack("<H", "\255\255")"#,
        r#"true -1 255 513 258 65535 3"#,
    ),
    (
        r#"return struct.unpack("<i", "\255\255\255\127"), struct.unpack("<i", "\0\0\0\128"), struct.unpack("<I", "\0\0\0\128"), struct.unpack("<l", "\255\255\255\255\255\255\255\255"), struct.unpack("<L", "\255\255\255\255\255\255\255\255")"#,
        r#"true 2147483647 -2147483648 2147483648 -1 1.8446744073709552e+19 9"#,
    ),
    (
        r#"return struct.unpack("<i9", "\255\0\0\0\0\0\0\0\0"), struct.unpack("<i9", "\1\0\0\0\0\0\0\0\0"), struct.unpack(">i9", "\0\0\0\0\0\0\0\0\255"), struct.unpack("<I16", string.rep("\255", 16))"#,
        r#"true -1 1 -1 1.8446744073709552e+19 17"#,
    ),
    (
        r#"return struct.unpack("<i16", "\0\0\0\0\0\0\0\128" .. string.rep("\0", 8)), struct.unpack("i0", "abc"), struct.unpack("I0", "")"#,
        r#"true -9.2233720368547758e+18 0 0 1"#,
    ),
    (
        r#"return struct.unpack("<f", "\0\0\192\63"), struct.unpack(">d", "\63\185\153\153\153\153\153\154"), struct.unpack("<d", "\0\0\0\0\0\0\240\127")"#,
        r#"true 1.5 0.10000000000000001 inf 9"#,
    ),
    (
        r#"return struct.unpack("c3", "abcdef"), struct.unpack("c3c2", "abcdef"), struct.unpack("s", "hi\0rest"), struct.unpack("ss", "a\0b\0")"#,
        r#"true "abc" "abc" "hi" "a" "b" 5"#,
    ),
    (
        r#"return struct.unpack("bc0", "\3abcd"), struct.unpack("c1c0", "2abc")"#,
        r#"true "abc" "ab" 4"#,
    ),
    (
        r#"return struct.unpack("c0", "abc")"#,
        r#"false "user_script:34: format 'c0' needs a previous size""#,
    ),
    (
        r#"return struct.unpack("bc0", "\9abc")"#,
        r#"false "user_script:34: bad argument #2 to 'unpack' (data string too short)""#,
    ),
    (
        r#"return struct.unpack("b c0", "\255abc")"#,
        r#"false "user_script:34: bad argument #2 to 'unpack' (data string too short)""#,
    ),
    (
        r#"return struct.unpack("s", "abc")"#,
        r#"false "user_script:34: unfinished string in data""#,
    ),
    (
        r#"return struct.unpack("i", "abc")"#,
        r#"false "user_script:34: bad argument #2 to 'unpack' (data string too short)""#,
    ),
    (
        r#"return struct.unpack("b", "")"#,
        r#"false "user_script:34: bad argument #2 to 'unpack' (data string too short)""#,
    ),
    (
        r#"return struct.unpack("b", "abc", 3), struct.unpack("b", "abc", 2), struct.unpack("", "abc", 7)"#,
        r#"true 99 98 7"#,
    ),
    (
        r#"return struct.unpack("b", "abc", 4)"#,
        r#"false "user_script:34: bad argument #2 to 'unpack' (data string too short)""#,
    ),
    (
        r#"return struct.unpack("b", "abc", 0)"#,
        r#"false "user_script:34: bad argument #3 to 'unpack' (offset must be 1 or greater)""#,
    ),
    (
        r#"return struct.unpack("b", "abc", -1)"#,
        r#"false "user_script:34: bad argument #2 to 'unpack' (data string too short)""#,
    ),
    (r#"return struct.unpack("", "abc", -5)"#, r#"true -5"#),
    (
        r#"return struct.unpack("!4bi", "\1\0\0\0\2\0\0\0"), struct.unpack("!4bi", "\1\0\0\0\2\0\0")"#,
        r#"false "user_script:34: bad argument #2 to 'unpack' (data string too short)""#,
    ),
    (
        r#"return struct.unpack("xb", "\1\2"), struct.unpack("z", "a")"#,
        r#"false "user_script:34: bad argument #1 to 'unpack' (invalid format option 'z')""#,
    ),
    (
        r#"return struct.unpack("b")"#,
        r#"false "user_script:34: bad argument #2 to 'unpack' (string expected, got no value)""#,
    ),
    (
        r#"return struct.unpack(nil, "a")"#,
        r#"false "user_script:34: bad argument #1 to 'unpack' (string expected, got nil)""#,
    ),
    (
        r#"return struct.unpack("b", "a", "x")"#,
        r#"false "user_script:34: bad argument #3 to 'unpack' (number expected, got string)""#,
    ),
    (
        r#"return select('#', struct.unpack(string.rep("b", 7000), string.rep("\1", 7000)))"#,
        r#"true 7001"#,
    ),
    (
        r#"return struct.unpack(string.rep("b", 8000), string.rep("\1", 8000))"#,
        r#"false "user_script:34: stack overflow (too many results)""#,
    ),
    (
        r#"return struct.unpack(string.rep("x", 9000), string.rep("\1", 9000))"#,
        r#"true 9001"#,
    ),
    (
        r#"return struct.size("b"), struct.size("bhilT"), struct.size("!bhilT"), struct.size("!4bd"), struct.size("c10"), struct.size("i3i5"), struct.size("")"#,
        r#"true 1 23 24 12 10 8 0"#,
    ),
    (
        r#"return struct.size("z"), struct.size("q9"), struct.size("bx"), struct.size("f d")"#,
        r#"true 0 0 2 12"#,
    ),
    (
        r#"return struct.size("s")"#,
        r#"false "user_script:34: bad argument #1 to 'size' (option 's' has no fixed size)""#,
    ),
    (
        r#"return struct.size("c0")"#,
        r#"false "user_script:34: bad argument #1 to 'size' (option 'c0' has no fixed size)""#,
    ),
    (r#"return struct.size("c")"#, r#"true 1"#),
    (
        r#"return struct.size("!5")"#,
        r#"false "user_script:34: alignment 5 is not a power of 2""#,
    ),
    (
        r#"return struct.size("i40")"#,
        r#"false "user_script:34: integral size 40 is larger than limit of 32""#,
    ),
    (
        r#"return struct.size("c2147483647c2147483647")"#,
        r#"true 4294967294"#,
    ),
    (
        r#"return struct.size("c2147483648")"#,
        r#"false "user_script:34: integral size overflow""#,
    ),
    (
        r#"return struct.size()"#,
        r#"false "user_script:34: bad argument #1 to 'size' (string expected, got no value)""#,
    ),
    (r#"return struct.size(5)"#, r#"true 0"#),
    (
        r#"local s = struct.pack(">!4 b h i d s c3", 1, -2, 300, 2.5, "str", "xyz") return s, struct.unpack(">!4 b h i d s c3", s)"#,
        r#"true "\x01\x00\xff\xfe\x00\x00\x01,@\x04\x00\x00\x00\x00\x00\x00str\x00xyz" 1 -2 300 2.5 "str" "xyz" 24"#,
    ),
    (
        r#"local p = struct.pack return p("w")"#,
        r#"false "user_script:34: bad argument #1 to 'p' (invalid format option 'w')""#,
    ),
    (
        r#"return pcall(struct.size, "s")"#,
        r#"true false "bad argument #1 to '?' (option 's' has no fixed size)""#,
    ),
    (
        r#"local t = {} for k in pairs(struct) do t[#t + 1] = k end table.sort(t) return table.concat(t, " ")"#,
        r#"true "pack size unpack""#,
    ),
    (
        r#"return struct.pack("c2000000000", "x")"#,
        r#"false "user_script:34: bad argument #3 to 'pack' (string too short)""#,
    ),
    (
        r#"return struct.unpack("c2000000000", "x")"#,
        r#"false "user_script:34: bad argument #2 to 'unpack' (data string too short)""#,
    ),
    (
        r#"return struct.pack(string.rep("x", 100000)) == string.rep("\0", 100000)"#,
        r#"true true"#,
    ),
    (
        r#"return struct.pack("I0", 1), struct.pack("<I1", 2^40 + 3)"#,
        r#"true "" "\x03""#,
    ),
    (
        r#"return struct.unpack("<I1I2", "\1\2\3\4", 2)"#,
        r#"true 2 1027 5"#,
    ),
    (
        r#"local seed = 12345 local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648 return math.floor(seed / 65536) % n end local function pick(t) return t[rnd(#t) + 1] end local h = 0 local function mix(ok, ...) local r = tostring(ok) for i = 1, select('#', ...) do r = r .. "|" .. render((select(i, ...))) end for k = 1, #r do h = (h * 31 + string.byte(r, k)) % 1000000007 end end local f = {'<', '>', '!', 'x', 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I', 'c', 's', 'f', 'd', '0', '1', '2', '4', '8', '9', '3', ' ', 'z'} for i = 1, 3000 do local p = {} for j = 1, rnd(6) do p[j] = pick(f) end local fmt = table.concat(p) local b = {} for j = 1, rnd(24) do b[j] = string.char(pick({0, 1, 2, 65, 127, 128, 255, rnd(256)})) end local data = table.concat(b) local k = rnd(3) if k == 0 then mix(pcall(struct.unpack, fmt, data, rnd(4) + 1)) elseif k == 1 then mix(pcall(struct.size, fmt)) else mix(pcall(struct.pack, fmt, pick({1, -1, 300, 2^40, -2^33, 0.5, 1/0, "ab", "123"}), pick({7, "xyzw", -3}), pick({"q", 65536, 3.25}))) end end return h"#,
        r#"true 441811651"#,
    ),
];
