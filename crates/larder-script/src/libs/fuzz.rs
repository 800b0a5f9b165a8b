//! Random inputs into every entry point that reads untrusted bytes: each call must return
//! a value or raise a Lua error, never panic or run away with memory.

use mlua::{Function, Lua, Table, Value};

use super::testkit::lua;

/// xorshift64*: a fixed seed keeps failures reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Random bytes, half the time drawn from `alphabet`.
    fn bytes(&mut self, max_len: usize, alphabet: &[u8]) -> Vec<u8> {
        let len = self.below(max_len + 1);
        let from_alphabet = self.below(2) == 0;
        (0..len)
            .map(|_| {
                if from_alphabet {
                    alphabet[self.below(alphabet.len())]
                } else {
                    self.next() as u8
                }
            })
            .collect()
    }
}

fn func(lua: &Lua, lib: &str, name: &str) -> Function {
    let t: Table = lua.globals().get(lib).expect("library");
    t.get(name).expect("function")
}

/// Calls `f`; a Lua error is a fine outcome, a panic fails the test.
fn call(f: &Function, args: Vec<Value>) -> bool {
    f.call::<mlua::MultiValue>(mlua::MultiValue::from_vec(args))
        .is_ok()
}

fn string(lua: &Lua, b: &[u8]) -> Value {
    Value::String(lua.create_string(b).expect("string"))
}

#[test]
fn decoders_take_any_bytes() {
    let lua = lua();
    let decode = func(&lua, "cjson", "decode");
    let unpack = func(&lua, "cmsgpack", "unpack");
    let unpack_one = func(&lua, "cmsgpack", "unpack_one");
    let unpack_limit = func(&lua, "cmsgpack", "unpack_limit");
    let json = b"[]{},:\"\\u0123456789abcdefABCDEF-+.eExIiNnfalsetrue \t\r\n\0";
    let msgpack: Vec<u8> = (0x80..=0xdf).chain([0, 1, 0x7f, 0xff, 0xe0]).collect();
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let (mut ok, mut failed) = (0, 0);
    for _ in 0..20_000 {
        let j = rng.bytes(64, json);
        let m = rng.bytes(48, &msgpack);
        let results = [
            call(&decode, vec![string(&lua, &j)]),
            call(&unpack, vec![string(&lua, &m)]),
            call(
                &unpack_one,
                vec![
                    string(&lua, &m),
                    Value::Number(rng.below(m.len() + 2) as f64 - 1.0),
                ],
            ),
            call(
                &unpack_limit,
                vec![
                    string(&lua, &m),
                    Value::Number(rng.below(5) as f64 - 1.0),
                    Value::Number(rng.below(m.len() + 2) as f64),
                ],
            ),
        ];
        for r in results {
            if r {
                ok += 1
            } else {
                failed += 1
            }
        }
    }
    // Both outcomes occur: the inputs reach past the first byte's checks.
    assert!(ok > 1000 && failed > 1000, "ok {ok}, failed {failed}");
}

#[test]
fn struct_takes_any_format() {
    let lua = lua();
    let pack = func(&lua, "struct", "pack");
    let unpack = func(&lua, "struct", "unpack");
    let size = func(&lua, "struct", "size");
    let fmt = b"<>!xbBhHlLTiIcsfd0123456789 \0";
    let mut rng = Rng(0x5eed_1234_abcd_0002);
    let mut ok = 0;
    for _ in 0..20_000 {
        let f = string(&lua, &rng.bytes(12, fmt));
        let data = string(&lua, &rng.bytes(40, &[0, 1, 0xff]));
        let arg = match rng.below(4) {
            0 => Value::Number(rng.next() as i64 as f64 / 3.0),
            1 => string(&lua, &rng.bytes(20, b"ab")),
            2 => Value::Number(f64::from_bits(rng.next())),
            _ => Value::Nil,
        };
        let offset = Value::Number(rng.below(50) as f64 - 5.0);
        ok += usize::from(call(&unpack, vec![f.clone(), data.clone(), offset]));
        ok += usize::from(call(&size, vec![f.clone()]));
        ok += usize::from(call(&pack, vec![f, arg.clone(), arg, data]));
    }
    assert!(ok > 1000, "ok {ok}");
}

#[test]
fn encoders_take_any_value() {
    let lua = lua();
    let mut rng = Rng(0x5eed_1234_abcd_0003);
    let encode = func(&lua, "cjson", "encode");
    let pack = func(&lua, "cmsgpack", "pack");
    let sparse = func(&lua, "cjson", "encode_sparse_array");
    for _ in 0..3000 {
        let v = random_value(&lua, &mut rng, 0);
        let convert = Value::Boolean(rng.below(2) == 0);
        let ratio = Value::Number(rng.below(4) as f64);
        call(
            &sparse,
            vec![convert, ratio, Value::Number(rng.below(20) as f64)],
        );
        call(&encode, vec![v.clone()]);
        call(&pack, vec![v]);
    }
}

fn random_value(lua: &Lua, rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth < 5 { 8 } else { 6 }) {
        0 => Value::Number(f64::from_bits(rng.next())),
        1 => Value::Number(rng.below(100) as f64),
        2 => string(lua, &rng.bytes(10, b"/\"\\")),
        3 => Value::Boolean(rng.below(2) == 0),
        4 => Value::NULL,
        5 => Value::Nil,
        _ => {
            let t = lua.create_table().expect("table");
            for _ in 0..rng.below(6) {
                let key = match rng.below(3) {
                    0 => Value::Number(rng.below(40) as f64 + 1.0),
                    1 => string(lua, &rng.bytes(3, b"k")),
                    _ => random_value(lua, rng, depth + 1),
                };
                if matches!(&key, Value::Nil) || matches!(&key, Value::Number(n) if n.is_nan()) {
                    continue;
                }
                let value = random_value(lua, rng, depth + 1);
                t.raw_set(key, value).expect("set");
            }
            if rng.below(10) == 0 {
                t.raw_set(1, t.clone()).expect("cycle");
            }
            Value::Table(t)
        }
    }
}
