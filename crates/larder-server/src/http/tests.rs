//! Socket-free tests of the HTTP door's pieces.

use super::*;

#[test]
fn tags() {
    assert_eq!(parse_tags(b"*"), Some(Tags::Any));
    assert_eq!(
        parse_tags(b"\"5\", W/\"7\""),
        Some(Tags::Versions(vec![5, 7]))
    );
    assert_eq!(parse_tags(b"\"x\""), Some(Tags::Versions(vec![])));
    assert_eq!(etag(42), "\"42\"");
}
