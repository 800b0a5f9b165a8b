use super::*;

#[test]
fn numbers_truncate() {
    assert_eq!(number_to_int(3.99), 3);
    assert_eq!(number_to_int(-3.99), -3);
    assert_eq!(number_to_int(f64::NAN), i64::MIN);
}
