//! `cmsgpack` against redis-server 7.0.15's outputs (filled in by `redis_cases.py`).

use crate::libs::testkit::check;

#[test]
fn cmsgpack_cases() {
    check(CASES);
}

const CASES: &[(&str, &str)] = &[];
