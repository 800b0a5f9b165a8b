use super::access::{READ, WRITE};
use super::*;
use crate::table::Registry;

const RW: u8 = READ | WRITE;

fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(crate::registry)
}

fn keys_of(words: &str) -> Vec<(String, u8)> {
    let argv: Vec<&[u8]> = words.split(' ').map(str::as_bytes).collect();
    let resolved = registry().resolve(&argv).expect(words);
    let mut out = vec![KeyRef {
        index: 99,
        access: 0,
    }];
    keys(&resolved, &argv, &mut out);
    out.iter()
        .map(|k| {
            (
                words
                    .split(' ')
                    .nth(k.index)
                    .expect("a key index")
                    .to_string(),
                k.access,
            )
        })
        .collect()
}

fn k(list: &[(&str, u8)]) -> Vec<(String, u8)> {
    list.iter().map(|(s, a)| (s.to_string(), *a)).collect()
}

#[test]
fn specs_are_sorted_and_every_one_is_a_larder_command() {
    for w in specs::SPECS.windows(2) {
        assert!(w[0].name < w[1].name, "{} before {}", w[0].name, w[1].name);
    }
    for e in specs::SPECS {
        assert!(
            registry().all().iter().any(|(n, _)| n == e.name),
            "{} is not a larder command",
            e.name
        );
    }
}

/// Every command larder has either has Redis 7.0.15's specs, or larder declares no keys for
/// it (the commands Redis has without keys, and larder's own: the work-queue family).
#[test]
fn every_registry_command_has_a_spec_entry() {
    let mut with_specs = 0;
    for (name, spec) in registry().all() {
        if lookup(name).is_some() {
            with_specs += 1;
            continue;
        }
        let keyless = spec.keys.first == 0
            && matches!(
                spec.keys.scope,
                Scope::Keys | Scope::Db | Scope::All | Scope::WalkDb
            );
        assert!(
            keyless,
            "{name} has keys in larder but no Redis 7.0.15 key specs: rerun \
             scripts/gen-acl-keyspecs.py, or decide its keys' ACL access here"
        );
    }
    assert_eq!(with_specs, specs::SPECS.len());
    // The lookup by stats index agrees with the lookup by name.
    for (i, (name, spec)) in registry().all().iter().enumerate() {
        let (s, src) = by_stat_index()[i];
        assert!(std::ptr::eq(s, *spec));
        let found = match src {
            Source::Redis(e) => e.name == name,
            // The shortcut stands for exactly the entry's one first-argument spec.
            Source::First(f) => {
                lookup(name).is_some_and(|e| matches!(e.specs, [only] if only.flags == f))
            }
            Source::Larder => false,
        };
        assert_eq!(found, lookup(name).is_some(), "{name}");
    }
}

#[test]
fn simple_ranges() {
    assert_eq!(keys_of("get a"), k(&[("a", READ)]));
    assert_eq!(
        keys_of("del a b c"),
        k(&[("a", WRITE), ("b", WRITE), ("c", WRITE)])
    );
    assert_eq!(keys_of("mset a 1 b 2"), k(&[("a", WRITE), ("b", WRITE)]));
    assert_eq!(
        keys_of("lmove a b left right"),
        k(&[("a", RW), ("b", WRITE)])
    );
    assert_eq!(keys_of("rename a b"), k(&[("a", RW), ("b", WRITE)]));
    assert_eq!(keys_of("copy a b db 1"), k(&[("a", READ), ("b", WRITE)]));
    assert_eq!(keys_of("exists a b"), k(&[("a", 0), ("b", 0)]));
    assert_eq!(keys_of("object encoding a"), k(&[("a", 0)]));
    assert_eq!(keys_of("xinfo stream s full"), k(&[("s", READ)]));
    assert_eq!(keys_of("incr n"), k(&[("n", RW)]));
    assert_eq!(keys_of("ping"), k(&[]));
    assert_eq!(keys_of("flushdb"), k(&[]));
    assert_eq!(keys_of("qput q m"), k(&[]));
}

#[test]
fn variable_flags_procs() {
    assert_eq!(keys_of("set a 1"), k(&[("a", WRITE)]));
    assert_eq!(keys_of("set a 1 ex 5 GET"), k(&[("a", RW)]));
    assert_eq!(keys_of("set a get"), k(&[("a", WRITE)]));
    assert_eq!(keys_of("bitfield a get u8 0"), k(&[("a", READ)]));
    assert_eq!(
        keys_of("bitfield a get u8 0 incrby u8 0 1"),
        k(&[("a", RW)])
    );
    assert_eq!(keys_of("bitfield a bogus"), k(&[("a", RW)]));
    assert_eq!(keys_of("bitfield_ro a get u8 0"), k(&[("a", READ)]));
}

#[test]
fn keynum_specs_and_their_fallback() {
    assert_eq!(
        keys_of("zunionstore d 2 a b weights 1 2"),
        k(&[("d", WRITE), ("a", READ), ("b", READ)])
    );
    // An unparsable count: the specs fail, genericGetKeys's atoi reads 2, flags are lost.
    assert_eq!(
        keys_of("zunionstore d 2x a b"),
        k(&[("a", 0), ("b", 0), ("d", 0)])
    );
    assert_eq!(keys_of("zunionstore d 3 a b"), k(&[]));
    assert_eq!(keys_of("zunionstore d 0 a b"), k(&[]));
    assert_eq!(keys_of("zunionstore d -1 a b"), k(&[]));
    assert_eq!(keys_of("eval s 2 a b c"), k(&[("a", RW), ("b", RW)]));
    assert_eq!(keys_of("eval s 0 a"), k(&[]));
    assert_eq!(keys_of("eval_ro s 1 a"), k(&[("a", READ)]));
    assert_eq!(keys_of("fcall f 1 a b"), k(&[("a", RW)]));
    assert_eq!(keys_of("lmpop 2 a b left"), k(&[("a", RW), ("b", RW)]));
    assert_eq!(keys_of("blmpop 0 1 a left"), k(&[("a", RW)]));
    assert_eq!(keys_of("zintercard 2 a b"), k(&[("a", READ), ("b", READ)]));
    assert_eq!(keys_of("sintercard 1 a limit 2"), k(&[("a", READ)]));
}

#[test]
fn keyword_specs() {
    assert_eq!(
        keys_of("xread count 2 streams a b 0 0"),
        k(&[("a", READ), ("b", READ)])
    );
    // Odd ids: the range's limit splits what follows STREAMS in two, rounding down.
    assert_eq!(keys_of("xread streams a b 0"), k(&[("a", READ)]));
    // STREAMS last: the spec fails, and xreadGetKeys finds nothing either.
    assert_eq!(keys_of("xread count 1 streams"), k(&[]));
    assert_eq!(
        keys_of("xreadgroup group g c streams a 0"),
        k(&[("a", READ)])
    );
    assert_eq!(
        keys_of("georadius g 0 0 1 km store d"),
        k(&[("g", READ), ("d", WRITE)])
    );
    assert_eq!(
        keys_of("georadius g 0 0 1 km storedist d"),
        k(&[("g", READ), ("d", WRITE)])
    );
    // STORE as the last argument: the keyword search never looks at the last argument.
    assert_eq!(keys_of("georadius g 0 0 1 km store"), k(&[("g", READ)]));
}

#[test]
fn sort_proc() {
    assert_eq!(keys_of("sort a"), k(&[("a", READ)]));
    assert_eq!(
        keys_of("sort a by w_* get o_* limit 0 1 store d"),
        k(&[("a", READ), ("d", WRITE)])
    );
    assert_eq!(
        keys_of("sort a store d1 store d2"),
        k(&[("a", READ), ("d2", WRITE)])
    );
    // GET's pattern is skipped, so a pattern named "store" is not the keyword.
    assert_eq!(keys_of("sort a get store x"), k(&[("a", READ)]));
    assert_eq!(keys_of("sort_ro a by x"), k(&[("a", READ)]));
}

#[test]
fn c_string_words() {
    let argv: [&[u8]; 4] = [b"set", b"a", b"1", b"GET\0x"];
    let resolved = registry().resolve(&argv).expect("a command");
    let mut out = Vec::new();
    keys(&resolved, &argv, &mut out);
    assert_eq!(
        out,
        [KeyRef {
            index: 1,
            access: RW
        }]
    );
}

#[test]
fn flags_for_getkeysandflags() {
    let argv: [&[u8]; 4] = [b"zunionstore", b"d", b"1", b"a"];
    let resolved = registry().resolve(&argv).expect("a command");
    let mut out = Vec::new();
    keys_with_flags(&resolved, &argv, &mut out);
    assert_eq!(
        out,
        [
            (1, flags::OW | flags::UPDATE),
            (3, flags::RO | flags::ACCESS)
        ]
    );
}

#[test]
fn channel_arguments() {
    let ch = |words: &str| {
        let argv: Vec<&[u8]> = words.split(' ').map(str::as_bytes).collect();
        let resolved = registry().resolve(&argv).expect(words);
        let mut out = Vec::new();
        channels(&resolved, &argv, &mut out);
        out.iter()
            .map(|c| (c.index, c.is_pattern))
            .collect::<Vec<_>>()
    };
    assert_eq!(ch("publish c m"), [(1, false)]);
    assert_eq!(ch("spublish c m"), [(1, false)]);
    assert_eq!(ch("subscribe a b"), [(1, false), (2, false)]);
    assert_eq!(ch("ssubscribe a"), [(1, false)]);
    assert_eq!(ch("psubscribe a* b"), [(1, true), (2, true)]);
    assert_eq!(ch("unsubscribe a"), []);
    assert_eq!(ch("punsubscribe a"), []);
    assert_eq!(ch("get a"), []);
}

#[test]
fn c_atoi() {
    use super::procs::atoi;
    assert_eq!(atoi(b"12"), 12);
    assert_eq!(atoi(b" -3x"), -3);
    assert_eq!(atoi(b"+7"), 7);
    assert_eq!(atoi(b"x"), 0);
    assert_eq!(atoi(b"4294967298"), 2);
    assert_eq!(atoi(b"99999999999999999999"), -1);
}

/// No argument list panics the interpreter, whatever the command.
#[test]
fn arbitrary_arguments_do_not_panic() {
    let words: [&[u8]; 12] = [
        b"0",
        b"1",
        b"2",
        b"-1",
        b"x",
        b"store",
        b"streams",
        b"get",
        b"keys",
        b"limit",
        b"99999999999",
        b"",
    ];
    let mut out = Vec::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    for (name, spec) in registry().all() {
        let mut parts: Vec<&[u8]> = name.split('|').map(str::as_bytes).collect();
        let base = parts.len();
        for n in 0..12 {
            parts.truncate(base);
            for _ in 0..n {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                parts.push(words[(seed % words.len() as u64) as usize]);
            }
            if !spec.arity_ok(parts.len()) {
                continue;
            }
            let resolved = registry().resolve(&parts).expect(name);
            keys(&resolved, &parts, &mut Vec::new());
            keys_with_flags(&resolved, &parts, &mut out);
            assert!(out.iter().all(|&(i, _)| i > 0 && i < parts.len()), "{name}");
        }
    }
}
