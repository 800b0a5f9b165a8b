use super::*;

#[test]
fn builds_both_flavors() {
    assert!(Sandbox::new(Flavor::Eval, 0).is_ok());
    assert!(Sandbox::new(Flavor::Function, 0).is_ok());
}
