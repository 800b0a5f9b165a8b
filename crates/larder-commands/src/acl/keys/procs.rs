//! Redis 7.0.15's key finding (`src/db.c`): `getKeysUsingKeySpecs` and the getkeys procs,
//! argument for argument (their quirks included: the keyword search never looks at the
//! argument where it stops, `genericGetKeys` reads its count with `atoi`, words compare as C
//! strings, up to a NUL).

use super::flags as f;
use super::{Begin, Find, GetKeys, Spec};

/// `getKeysUsingKeySpecs` (without GET_KEYSPEC_RETURN_PARTIAL): pushes the keys of every
/// spec, and returns false when a spec is invalid for these arguments or incomplete (the
/// caller then discards `out` and asks the getkeys proc).
pub(super) fn from_specs<T>(
    specs: &[Spec],
    argv: &[&[u8]],
    out: &mut Vec<T>,
    make: &impl Fn(usize, u16) -> T,
) -> bool {
    let argc = argv.len() as i64;
    for spec in specs {
        let mut first = match spec.begin {
            Begin::Index(pos) => i64::from(pos),
            Begin::Keyword { keyword, startfrom } => {
                let startfrom = i64::from(startfrom);
                let start = if startfrom > 0 {
                    startfrom
                } else {
                    argc + startfrom
                };
                let end = if startfrom > 0 { argc - 1 } else { 1 };
                let mut found = 0;
                let mut i = start;
                while i != end {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if c_eq(argv[i as usize], keyword) {
                        found = i + 1;
                        break;
                    }
                    i = if start <= end { i + 1 } else { i - 1 };
                }
                if found == 0 {
                    continue;
                }
                found
            }
            Begin::Unknown => return false,
        };
        let (last, step) = match spec.find {
            Find::Range {
                lastkey,
                step,
                limit,
            } => {
                let lastkey = i64::from(lastkey);
                let last = if lastkey >= 0 {
                    first + lastkey
                } else if limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / i64::from(limit) + lastkey)
                };
                (last, i64::from(step))
            }
            Find::Keynum {
                keynumidx,
                firstkey,
                step,
            } => {
                let at = first + i64::from(keynumidx);
                if i64::from(keynumidx) >= argc || at >= argc {
                    return false;
                }
                let Some(numkeys) = crate::args::parse_i64(argv[at as usize]) else {
                    return false;
                };
                if numkeys < 0 {
                    return false;
                }
                first += i64::from(firstkey);
                // Redis casts the count to an int.
                (first + i64::from(numkeys as i32) - 1, i64::from(step))
            }
            Find::Unknown => return false,
        };
        if last >= argc || last < first || first >= argc {
            return false;
        }
        let mut i = first;
        while i <= last {
            out.push(make(i as usize, spec.flags));
            i += step.max(1);
        }
        if spec.flags & f::INCOMPLETE != 0 {
            return false;
        }
    }
    true
}

/// The getkeys proc of `src/db.c` (`out` is empty).
pub(super) fn getkeys<T>(
    proc: GetKeys,
    argv: &[&[u8]],
    out: &mut Vec<T>,
    make: &impl Fn(usize, u16) -> T,
) {
    let argc = argv.len();
    match proc {
        GetKeys::None => {}
        GetKeys::Set => {
            let get = argv.iter().skip(3).any(|a| c_eq(a, b"get"));
            let fl = if get {
                f::RW | f::ACCESS | f::UPDATE
            } else {
                f::OW | f::UPDATE
            };
            out.push(make(1, fl));
        }
        GetKeys::Bitfield => out.push(make(1, bitfield_flags(argv))),
        GetKeys::SortRo => out.push(make(1, f::RO | f::ACCESS)),
        GetKeys::Sort => {
            out.push(make(1, f::RO | f::ACCESS));
            let mut store = None;
            let mut i = 2;
            while i < argc {
                let a = argv[i];
                if c_eq(a, b"limit") {
                    i += 2;
                } else if c_eq(a, b"store") && i + 1 < argc {
                    // The last STORE wins, as SORT itself.
                    store = Some(i + 1);
                } else if c_eq(a, b"get") || c_eq(a, b"by") {
                    i += 1;
                }
                i += 1;
            }
            if let Some(at) = store {
                out.push(make(at, f::OW | f::UPDATE));
            }
        }
        GetKeys::Georadius => {
            out.push(make(1, 0));
            let mut stored = None;
            let mut i = 5;
            while i < argc {
                let a = argv[i];
                if (c_eq(a, b"store") || c_eq(a, b"storedist")) && i + 1 < argc {
                    stored = Some(i + 1);
                    i += 1;
                }
                i += 1;
            }
            if let Some(at) = stored {
                out.push(make(at, 0));
            }
        }
        GetKeys::Xread => {
            let mut streams = None;
            let mut i = 1;
            while i < argc {
                let a = argv[i];
                if c_eq(a, b"block") || c_eq(a, b"count") {
                    i += 1;
                } else if c_eq(a, b"group") {
                    i += 2;
                } else if c_eq(a, b"noack") {
                } else if c_eq(a, b"streams") {
                    streams = Some(i);
                    break;
                } else {
                    break;
                }
                i += 1;
            }
            let Some(pos) = streams else { return };
            let num = argc - pos - 1;
            if num == 0 || num % 2 != 0 {
                return;
            }
            out.extend((pos + 1..argc - num / 2).map(|i| make(i, 0)));
        }
        GetKeys::Generic {
            store,
            count,
            first,
        } => {
            let (store, first) = (usize::from(store), usize::from(first));
            let Some(arg) = argv.get(usize::from(count)) else {
                return;
            };
            let num = atoi(arg);
            if num < 1 || i64::from(num) > argc as i64 - first as i64 {
                return;
            }
            out.extend((0..num as usize).map(|i| make(first + i, 0)));
            if store != 0 {
                out.push(make(store, 0));
            }
        }
    }
}

/// Redis's `strcasecmp` of an argument with a word: the argument ends at its first NUL.
fn c_eq(arg: &[u8], word: &[u8]) -> bool {
    let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len());
    arg[..end].eq_ignore_ascii_case(word)
}

/// `bitfieldGetKeys`: read-only when every operation is a GET.
fn bitfield_flags(argv: &[&[u8]]) -> u16 {
    let argc = argv.len();
    let mut i = 2;
    while i < argc {
        let rem = argc - i - 1;
        let a = argv[i];
        if c_eq(a, b"get") && rem >= 2 {
            i += 2;
        } else if (c_eq(a, b"set") || c_eq(a, b"incrby")) && rem >= 3 {
            return f::RW | f::ACCESS | f::UPDATE;
        } else if c_eq(a, b"overflow") && rem >= 1 {
            i += 1;
        } else {
            // A syntax error: Redis assumes a write.
            return f::RW | f::ACCESS | f::UPDATE;
        }
        i += 1;
    }
    f::RO | f::ACCESS
}

/// C's `atoi` as glibc has it (`(int)strtol(s, NULL, 10)`): leading white space, a sign,
/// digits up to the first other byte; out of a long's range it saturates, then the cast to
/// int keeps the low 32 bits.
pub(super) fn atoi(s: &[u8]) -> i32 {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
        i += 1;
    }
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let mut v: i64 = 0;
    let mut overflow = false;
    while let Some(d) = s.get(i).filter(|c| c.is_ascii_digit()) {
        match v
            .checked_mul(10)
            .and_then(|v| v.checked_add(i64::from(d - b'0')))
        {
            Some(n) => v = n,
            None => overflow = true,
        }
        i += 1;
    }
    let v = match (overflow, neg) {
        (true, false) => i64::MAX,
        (true, true) => i64::MIN,
        (false, true) => -v,
        (false, false) => v,
    };
    v as i32
}
