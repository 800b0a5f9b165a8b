//! `cjson` against redis-server 7.0.15's outputs (filled in by `redis_cases.py`).

use crate::libs::testkit::check;

#[test]
fn cjson_cases() {
    check(CASES);
}

const CASES: &[(&str, &str)] = &[
    (
        r#"return cjson.encode({1,2,{a=1}})"#,
        r#"true "[1,2,{\"a\":1}]""#,
    ),
    (r#"return cjson.encode({})"#, r#"true "{}""#),
    (
        r#"return cjson.encode("a/b\"c\\d\n\r\t\b\f\0\1\31\127\128\255")"#,
        r#"true "\"a\\/b\\\"c\\\\d\\n\\r\\t\\b\\f\\u0000\\u0001\\u001f\\u007f\x80\xff\"""#,
    ),
    (
        r#"return cjson.encode(0.1), cjson.encode(1/3), cjson.encode(100), cjson.encode(-0.0), cjson.encode(1e15), cjson.encode(1e100)"#,
        r#"true "0.1" "0.33333333333333" "100" "-0" "1e+15" "1e+100""#,
    ),
    (
        r#"return cjson.encode(123456789012345), cjson.encode(1234567890123456), cjson.encode(0.00001), cjson.encode(0.0001), cjson.encode(2^53)"#,
        r#"true "1.2345678901234e+14" "1.2345678901235e+15" "1e-05" "0.0001" "9.007199254741e+15""#,
    ),
    (
        r#"return cjson.encode(true), cjson.encode(false), cjson.encode(nil), cjson.encode(cjson.null)"#,
        r#"true "true" "false" "null" "null""#,
    ),
    (
        r#"return cjson.encode({a={b={c={}}}})"#,
        r#"true "{\"a\":{\"b\":{\"c\":{}}}}""#,
    ),
    (
        r#"return cjson.encode({[1]=1,[2]=2,[4]=4})"#,
        r#"true "[1,2,null,4]""#,
    ),
    (
        r#"return cjson.encode({[1]=1,[20]=20})"#,
        r#"false "user_script:34: Cannot serialise table: excessively sparse array""#,
    ),
    (
        r#"return cjson.encode({[1]=1,[11]=2})"#,
        r#"false "user_script:34: Cannot serialise table: excessively sparse array""#,
    ),
    (
        r#"return cjson.encode({[3000000000]=1})"#,
        r#"true "{\"3000000000\":1}""#,
    ),
    (
        r#"return cjson.encode({[3000000000]=1, 5})"#,
        r#"true "{\"1\":5,\"3000000000\":1}""#,
    ),
    (r#"return cjson.encode({[1.5]=1})"#, r#"true "{\"1.5\":1}""#),
    (
        r#"return cjson.encode({[-1]="x", [0]="y"})"#,
        r#"true "{\"-1\":\"x\",\"0\":\"y\"}""#,
    ),
    (
        r#"return cjson.encode({1, 2, x=3})"#,
        r#"true "{\"1\":1,\"2\":2,\"x\":3}""#,
    ),
    (
        r#"return cjson.encode({[true]=1})"#,
        r#"false "user_script:34: Cannot serialise boolean: table key must be a number or string""#,
    ),
    (
        r#"return cjson.encode({f=function() end})"#,
        r#"false "user_script:34: Cannot serialise function: type not supported""#,
    ),
    (
        r#"return cjson.encode(function() end)"#,
        r#"false "user_script:34: Cannot serialise function: type not supported""#,
    ),
    (
        r#"return cjson.encode(coroutine.create(function() end))"#,
        r#"false "user_script:34: Cannot serialise thread: type not supported""#,
    ),
    (
        r#"return cjson.encode(0/0)"#,
        r#"false "user_script:34: Cannot serialise number: must not be NaN or Inf""#,
    ),
    (
        r#"return cjson.encode({1/0})"#,
        r#"false "user_script:34: Cannot serialise number: must not be NaN or Inf""#,
    ),
    (
        r#"return cjson.encode()"#,
        r#"false "user_script:34: bad argument #1 to 'encode' (expected 1 argument)""#,
    ),
    (
        r#"return cjson.encode(1, 2)"#,
        r#"false "user_script:34: bad argument #1 to 'encode' (expected 1 argument)""#,
    ),
    (
        r#"local t = {} t[1] = t return cjson.encode(t)"#,
        r#"false "user_script:34: Cannot serialise, excessive nesting (1001)""#,
    ),
    (
        r#"cjson.encode_max_depth(3) return cjson.encode({{{1}}}), pcall(cjson.encode, {{{{1}}}})"#,
        r#"true "[[[1]]]" false "Cannot serialise, excessive nesting (4)""#,
    ),
    (
        r#"return cjson.encode_max_depth(0)"#,
        r#"false "user_script:34: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)""#,
    ),
    (
        r#"return cjson.encode_max_depth(5, 6)"#,
        r#"false "user_script:34: bad argument #2 to 'encode_max_depth' (found too many arguments)""#,
    ),
    (
        r#"return cjson.encode_max_depth("x")"#,
        r#"false "user_script:34: bad argument #1 to 'encode_max_depth' (number expected, got string)""#,
    ),
    (r#"return cjson.encode_max_depth(2^32 + 7)"#, r#"true 7"#),
    (
        r#"return cjson.encode_sparse_array()"#,
        r#"true false 2 10"#,
    ),
    (
        r#"return cjson.encode_sparse_array(true), cjson.encode({[1]=1,[20]=20})"#,
        r#"true true "{\"1\":1,\"20\":20}""#,
    ),
    (
        r#"return cjson.encode_sparse_array(false, 0), cjson.encode({[1]=1,[20]=20})"#,
        r#"true false "[1,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,20]""#,
    ),
    (
        r#"return cjson.encode_sparse_array(false, 2, 30), cjson.encode({[1]=1,[20]=20})"#,
        r#"true false "[1,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,20]""#,
    ),
    (
        r#"return cjson.encode_sparse_array("on", 1, 0), cjson.encode({1, 2, 3}), cjson.encode({[2]=1})"#,
        r#"true true "[1,2,3]" "{\"2\":1}""#,
    ),
    (
        r#"return cjson.encode_sparse_array("maybe")"#,
        r#"false "user_script:34: bad argument #1 to 'encode_sparse_array' (invalid option 'maybe')""#,
    ),
    (
        r#"return cjson.encode_sparse_array(nil, -1)"#,
        r#"false "user_script:34: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)""#,
    ),
    (
        r#"return cjson.encode_number_precision(3), cjson.encode(math.pi), cjson.encode(1234567), cjson.encode(0.000123456)"#,
        r#"true 3 "3.14" "1.23e+06" "0.000123""#,
    ),
    (
        r#"return cjson.encode_number_precision(15)"#,
        r#"false "user_script:34: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)""#,
    ),
    (
        r#"return cjson.encode_number_precision(1), cjson.encode(0.125), cjson.encode(2.5), cjson.encode(15)"#,
        r#"true 1 "0.1" "2" "2e+01""#,
    ),
    (
        r#"return cjson.encode_invalid_numbers(true), cjson.encode({0/0, 1/0, -1/0})"#,
        r#"true true "[nan,inf,-inf]""#,
    ),
    (
        r#"return cjson.encode_invalid_numbers("null"), cjson.encode({0/0, 1/0, [1/0]=1})"#,
        r#"true "null" "{\"1\":null,\"2\":null,\"null\":1}""#,
    ),
    (
        r#"return cjson.encode_invalid_numbers(true), cjson.encode({[1/0]=1})"#,
        r#"true true "{\"inf\":1}""#,
    ),
    (
        r#"return cjson.encode_invalid_numbers("null"), cjson.encode({[1/0]=1})"#,
        r#"true "null" "{\"null\":1}""#,
    ),
    (
        r#"return cjson.encode_invalid_numbers("off"), cjson.encode_invalid_numbers(), cjson.encode_invalid_numbers("null"), cjson.encode_invalid_numbers()"#,
        r#"true false false "null" "null""#,
    ),
    (
        r#"return cjson.encode_invalid_numbers("bad")"#,
        r#"false "user_script:34: bad argument #1 to 'encode_invalid_numbers' (invalid option 'bad')""#,
    ),
    (
        r#"return cjson.encode_keep_buffer(false), cjson.encode({1}), cjson.encode_keep_buffer("on")"#,
        r#"true false "[1]" true"#,
    ),
    (
        r#"return cjson.decode('[1,{"a":null},"x",true,false]')"#,
        r#"true {1=1,2={"a"=null},3="x",4=true,5=false}"#,
    ),
    (
        r#"return cjson.decode('{"a":{"b":[1,2,{"c":"d"}]}}')"#,
        r#"true {"a"={"b"={1=1,2=2,3={"c"="d"}}}}"#,
    ),
    (
        r#"return cjson.decode('  "str\\u00e9\\u20ac\\ud83d\\ude00\\/\\b\\f\\n\\r\\t\\"\\\\"  ')"#,
        r#"true "str\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80/\x08\x0c\x0a\x0d\x09\"\\""#,
    ),
    (
        r#"return cjson.decode('"\\ud83d"')"#,
        r#"false "user_script:34: Expected value but found invalid unicode escape code at character 2""#,
    ),
    (
        r#"return cjson.decode('"\\ude00"')"#,
        r#"false "user_script:34: Expected value but found invalid unicode escape code at character 2""#,
    ),
    (
        r#"return cjson.decode('"\\ud83d\\u0041"')"#,
        r#"false "user_script:34: Expected value but found invalid unicode escape code at character 2""#,
    ),
    (
        r#"return cjson.decode('"\\u12G4"')"#,
        r#"false "user_script:34: Expected value but found invalid unicode escape code at character 2""#,
    ),
    (
        r#"return cjson.decode('"\\x"')"#,
        r#"false "user_script:34: Expected value but found invalid escape code at character 2""#,
    ),
    (
        r#"return cjson.decode('"abc')"#,
        r#"false "user_script:34: Expected value but found unexpected end of string at character 5""#,
    ),
    (
        r#"return cjson.decode('x')"#,
        r#"false "user_script:34: Expected value but found invalid token at character 1""#,
    ),
    (
        r#"return cjson.decode('')"#,
        r#"false "user_script:34: Expected value but found T_END at character 1""#,
    ),
    (
        r#"return cjson.decode('[1,2')"#,
        r#"false "user_script:34: Expected comma or array end but found T_END at character 5""#,
    ),
    (
        r#"return cjson.decode('[1 2]')"#,
        r#"false "user_script:34: Expected comma or array end but found T_NUMBER at character 4""#,
    ),
    (
        r#"return cjson.decode('{"a" 1}')"#,
        r#"false "user_script:34: Expected colon but found T_NUMBER at character 6""#,
    ),
    (
        r#"return cjson.decode('{"a":1,}')"#,
        r#"false "user_script:34: Expected object key string but found T_OBJ_END at character 8""#,
    ),
    (
        r#"return cjson.decode('{1:2}')"#,
        r#"false "user_script:34: Expected object key string but found T_NUMBER at character 2""#,
    ),
    (
        r#"return cjson.decode('[1,]')"#,
        r#"false "user_script:34: Expected value but found T_ARR_END at character 4""#,
    ),
    (
        r#"return cjson.decode('1 2')"#,
        r#"false "user_script:34: Expected the end but found T_NUMBER at character 3""#,
    ),
    (r#"return cjson.decode('[1]\0garbage')"#, r#"true {1=1}"#),
    (
        r#"return cjson.decode('a\0')"#,
        r#"false "user_script:34: JSON parser does not support UTF-16 or UTF-32""#,
    ),
    (
        r#"return cjson.decode('\0a')"#,
        r#"false "user_script:34: JSON parser does not support UTF-16 or UTF-32""#,
    ),
    (
        r#"return cjson.decode('-1.5e3'), cjson.decode('0'), cjson.decode('-0'), cjson.decode('1E+2'), cjson.decode('123456789012345678901234567890')"#,
        r#"true -1500 0 -0 100 1.2345678901234568e+29"#,
    ),
    (
        r#"return cjson.decode('0x1F'), cjson.decode('+5'), cjson.decode('007'), cjson.decode('-0x10'), cjson.decode('1E2'), cjson.decode('-.5')"#,
        r#"true 31 5 7 -16 100 -0.5"#,
    ),
    (
        r#"return cjson.decode('1e')"#,
        r#"false "user_script:34: Expected the end but found invalid token at character 2""#,
    ),
    (
        r#"return cjson.decode('[Infinity, -inf, NaN, -nan]')"#,
        r#"true {1=inf,2=-inf,3=nan,4=-nan}"#,
    ),
    (
        r#"return cjson.decode('[1.5.3]')"#,
        r#"false "user_script:34: Expected comma or array end but found invalid token at character 5""#,
    ),
    (
        r#"return cjson.decode('-')"#,
        r#"false "user_script:34: Expected value but found invalid number at character 1""#,
    ),
    (
        r#"return cjson.decode('tru')"#,
        r#"false "user_script:34: Expected value but found invalid token at character 1""#,
    ),
    (
        r#"return cjson.decode('nul')"#,
        r#"false "user_script:34: Expected value but found invalid token at character 1""#,
    ),
    (
        r#"return cjson.decode('[0x1p3, 0x.8, 0X1P-2, 1e400, -1e400, 1e-400]')"#,
        r#"true {1=8,2=0.5,3=0.25,4=inf,5=-inf,6=0}"#,
    ),
    (
        r#"return cjson.decode_invalid_numbers(false), pcall(cjson.decode, '0x10')"#,
        r#"true false false "Expected value but found invalid number at character 1""#,
    ),
    (
        r#"return cjson.decode_invalid_numbers(false), pcall(cjson.decode, 'Infinity')"#,
        r#"true false false "Expected value but found invalid token at character 1""#,
    ),
    (
        r#"return cjson.decode_invalid_numbers(false), pcall(cjson.decode, '-inf'), cjson.decode('-5')"#,
        r#"true false false -5"#,
    ),
    (
        r#"return cjson.decode_invalid_numbers(false), pcall(cjson.decode, '01')"#,
        r#"true false false "Expected value but found invalid number at character 1""#,
    ),
    (
        r#"return cjson.decode(string.rep('[', 1001) .. string.rep(']', 1001))"#,
        r#"false "user_script:34: Found too many nested data structures (1001) at character 1001""#,
    ),
    (
        r#"return #cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000))"#,
        r#"true 1"#,
    ),
    (
        r#"cjson.decode_max_depth(2) return cjson.decode('[[1]]'), select(2, pcall(cjson.decode, '[[[1]]]')), pcall(cjson.decode, '{"a":{"b":{}}}')"#,
        r#"true {1={1=1}} "Found too many nested data structures (3) at character 3" false "Found too many nested data structures (3) at character 11""#,
    ),
    (
        r#"cjson.decode_max_depth(100000) return pcall(cjson.decode, string.rep('[', 9000) .. string.rep(']', 9000))"#,
        r#"true false "Found too many nested data structures (7999) at character 7999""#,
    ),
    (
        r#"cjson.decode_max_depth(100000) return pcall(cjson.decode, string.rep('{"a":', 5000) .. '1' .. string.rep('}', 5000))"#,
        r#"true false "Found too many nested data structures (4000) at character 19996""#,
    ),
    (
        r#"cjson.encode_max_depth(100000) local t = {} for i = 1, 9000 do t = {t} end return pcall(cjson.encode, t)"#,
        r#"true false "Cannot serialise, excessive nesting (7998)""#,
    ),
    (
        r#"cjson.encode_max_depth(100000) local t = {} for i = 1, 5000 do t = {a=t} end return pcall(cjson.encode, t)"#,
        r#"true false "Cannot serialise, excessive nesting (4000)""#,
    ),
    (
        r#"cjson.encode_max_depth(100000) local t = {} for i = 1, 7990 do t = {t} end return #cjson.encode(t)"#,
        r#"true 15982"#,
    ),
    (
        r#"return cjson.decode()"#,
        r#"false "user_script:34: bad argument #1 to 'decode' (expected 1 argument)""#,
    ),
    (r#"return cjson.decode(123)"#, r#"true 123"#),
    (
        r#"return cjson.decode({})"#,
        r#"false "user_script:34: bad argument #1 to 'decode' (string expected, got table)""#,
    ),
    (
        r#"return cjson.decode('[]', 1)"#,
        r#"false "user_script:34: bad argument #1 to 'decode' (expected 1 argument)""#,
    ),
    (
        r#"return cjson.decode('{}'), cjson.decode('[]'), cjson.decode('{"a":1,"a":2}')"#,
        r#"true {} {} {"a"=2}"#,
    ),
    (
        r#"return cjson.decode('"\1\31 raw controls"')"#,
        r#"true "\x01\x1f raw controls""#,
    ),
    (
        r#"return cjson.decode('{"k":[1,{"z":[]}], "n":null}').k[2].z, cjson.decode('[null]')[1] == cjson.null"#,
        r#"true {} true"#,
    ),
    (
        r#"local s = cjson.encode({a=1,b={1,2,3},c="x",d=true,e={x={y="z"}}}) return s, cjson.encode(cjson.decode(s)) == s"#,
        r#"true "{\"a\":1,\"c\":\"x\",\"b\":[1,2,3],\"e\":{\"x\":{\"y\":\"z\"}},\"d\":true}" true"#,
    ),
    (
        r#"local t = {} for i = 1, 50 do t["k" .. i] = i end return cjson.encode(t)"#,
        r#"true "{\"k12\":12,\"k32\":32,\"k19\":19,\"k39\":39,\"k31\":31,\"k11\":11,\"k30\":30,\"k38\":38,\"k14\":14,\"k47\":47,\"k1\":1,\"k43\":43,\"k3\":3,\"k27\":27,\"k34\":34,\"k18\":18,\"k7\":7,\"k5\":5,\"k50\":50,\"k26\":26,\"k15\":15,\"k22\":22,\"k48\":48,\"k46\":46,\"k45\":45,\"k41\":41,\"k21\":21,\"k29\":29,\"k25\":25,\"k49\":49,\"k42\":42,\"k40\":40,\"k35\":35,\"k36\":36,\"k28\":28,\"k20\":20,\"k37\":37,\"k8\":8,\"k23\":23,\"k16\":16,\"k9\":9,\"k2\":2,\"k44\":44,\"k13\":13,\"k24\":24,\"k33\":33,\"k6\":6,\"k17\":17,\"k4\":4,\"k10\":10}""#,
    ),
    (
        r#"return cjson.encode({[1]="a", [2]="b", [3]="c", n=3})"#,
        r#"true "{\"1\":\"a\",\"2\":\"b\",\"3\":\"c\",\"n\":3}""#,
    ),
    (
        r#"local j = cjson.new() j.encode_max_depth(1) return select(2, pcall(j.encode, {{}})), cjson.encode({{}}), j._VERSION"#,
        r#"true "Cannot serialise, excessive nesting (2)" "[{}]" "2.1.0""#,
    ),
    (
        r#"return cjson.null, type(cjson.null), cjson._NAME, cjson._VERSION"#,
        r#"true null "userdata" "cjson" "2.1.0""#,
    ),
    (
        r#"local t = {} for k in pairs(cjson) do t[#t + 1] = k end table.sort(t) return table.concat(t, " ")"#,
        r#"true "_NAME _VERSION decode decode_invalid_numbers decode_max_depth encode encode_invalid_numbers encode_keep_buffer encode_max_depth encode_number_precision encode_sparse_array new null""#,
    ),
    (
        r#"local e = cjson.encode return e(e)"#,
        r#"false "user_script:34: Cannot serialise function: type not supported""#,
    ),
    (
        r#"return cjson.encode({{}, {{}}, {a={}}})"#,
        r#"true "[{},[{}],{\"a\":{}}]""#,
    ),
    (
        r#"return cjson.encode({[1]=1, [2]=2, [3]=nil, [4]=4, [5]=5, [6]=6, [20]=20})"#,
        r#"false "user_script:34: Cannot serialise table: excessively sparse array""#,
    ),
    (
        r#"return cjson.encode({"\226\130\172", "\0"})"#,
        r#"true "[\"\xe2\x82\xac\",\"\\u0000\"]""#,
    ),
    (
        r#"return cjson.decode('[1,  2 ,\t\n\r3 ]')"#,
        r#"true {1=1,2=2,3=3}"#,
    ),
    (
        r#"return cjson.decode('{"a":1} x')"#,
        r#"false "user_script:34: Expected the end but found invalid token at character 9""#,
    ),
    (
        r#"return cjson.decode('"\\u00"')"#,
        r#"false "user_script:34: Expected value but found invalid unicode escape code at character 2""#,
    ),
    (
        r#"return cjson.encode(1e-310), cjson.encode(5e-324), cjson.encode(1.7976931348623157e308), cjson.encode(-123.456)"#,
        r#"true "1e-310" "4.9406564584125e-324" "1.7976931348623e+308" "-123.456""#,
    ),
    (
        r#"return cjson.decode('[1e-310, 4.9e-324, 2.5e-324, 0x1.fffffffffffff8p1023, 0x0.0000000000001p-1022]')"#,
        r#"true {1=9.9999999999999694e-311,2=4.9406564584124654e-324,3=4.9406564584124654e-324,4=inf,5=4.9406564584124654e-324}"#,
    ),
    (
        r#"return cjson.encode_sparse_array(false, 3, 0), cjson.encode({[1]=1, [3]=3}), pcall(cjson.encode, {[1]=1, [4]=4})"#,
        r#"true false "[1,null,3]" true "[1,null,null,4]""#,
    ),
    (
        r#"local t = {} for i = 1, 20000 do t['k' .. i] = i end local s = cjson.encode(t) return #s, #cjson.decode(s) == 0, cjson.decode(s).k777"#,
        r#"true 277789 true 777"#,
    ),
    (
        r#"local t = {} for i = 1, 20000 do t[i] = {id = i, name = "n" .. i} end local s = cjson.encode(t) return #s, string.sub(s, 1, 60), #cjson.decode(s), cjson.decode(s)[19999].name"#,
        r#"true 557789 "[{\"id\":1,\"name\":\"n1\"},{\"id\":2,\"name\":\"n2\"},{\"id\":3,\"name\":\"n" 20000 "n19999""#,
    ),
    (
        r#"local t = {} for i = 1, 20000 do t[i] = "s" .. i end return #cjson.encode(t), cjson.decode(cjson.encode(t))[20000]"#,
        r#"true 168895 "s20000""#,
    ),
    (
        r#"local seed = 12345 local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648 return math.floor(seed / 65536) % n end local function pick(t) return t[rnd(#t) + 1] end local h = 0 local function mix(ok, ...) local r = tostring(ok) for i = 1, select('#', ...) do r = r .. "|" .. render((select(i, ...))) end for k = 1, #r do h = (h * 31 + string.byte(r, k)) % 1000000007 end end local a = {'[', ']', '{', '}', ',', ':', '"', '\\', 'u', 'd', '8', '0', '1', '-', '+', 'e', '.', 'x', 't', 'r', 'n', 'f', 'a', 'l', 's', ' ', '\0', 'I', 'N', '9', 'D', 'c', 'p', '\255'} for i = 1, 3000 do local parts = {} for j = 1, rnd(14) do parts[j] = pick(a) end mix(pcall(cjson.decode, table.concat(parts))) end return h"#,
        r#"true 15808810"#,
    ),
    (
        r#"local seed = 12345 local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648 return math.floor(seed / 65536) % n end local function pick(t) return t[rnd(#t) + 1] end local h = 0 local function mix(ok, ...) local r = tostring(ok) for i = 1, select('#', ...) do r = r .. "|" .. render((select(i, ...))) end for k = 1, #r do h = (h * 31 + string.byte(r, k)) % 1000000007 end end local function gen(d) local c = rnd(9) if c == 0 then return rnd(1000) - 500 elseif c == 1 then return (rnd(2000000) - 1000000) / (rnd(999) + 1) elseif c == 2 then return string.char(rnd(256), rnd(256), rnd(128)) elseif c == 3 then return rnd(2) == 1 elseif c == 4 then return cjson.null elseif d < 4 then local t = {} for i = 1, rnd(6) do local k = rnd(4) if k == 0 then t[#t + 1] = gen(d + 1) elseif k == 1 then t[rnd(30) + 1] = gen(d + 1) elseif k == 2 then t["k" .. rnd(10)] = gen(d + 1) else t[rnd(7) - 3 + rnd(4) / 4] = gen(d + 1) end end return t else return 2 ^ (rnd(200) - 100) end end for i = 1, 1500 do cjson.encode_sparse_array(rnd(2) == 1, rnd(4), rnd(12)) cjson.encode_number_precision(rnd(14) + 1) cjson.encode_invalid_numbers(pick({true, false, "null"})) local v = gen(0) local ok, s = pcall(cjson.encode, v) mix(ok, s) if ok then mix(pcall(cjson.decode, s)) end end return h"#,
        r#"true 396810312"#,
    ),
    (
        r#"return cjson.encode_sparse_array(true, -1)"#,
        r#"false "user_script:34: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)""#,
    ),
    (
        r#"local ok = pcall(cjson.encode_sparse_array, true, -1) return ok, cjson.encode_sparse_array()"#,
        r#"true false true 2 10"#,
    ),
    (
        r#"local ok = pcall(cjson.encode_sparse_array, true, 5, -1) return ok, cjson.encode_sparse_array()"#,
        r#"true false true 5 10"#,
    ),
];
