//! `cjson` against redis-server 7.0.15's outputs (filled in by `redis_cases.py`).

use crate::libs::testkit::check;

#[test]
fn cjson_cases() {
    check(CASES);
}

const CASES: &[(&str, &str)] = &[];
