//! Consumer groups: a placeholder until the groups module lands.

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Groups;
