//! ACL categories: which of Redis's 21 categories each command is in (COMMAND INFO, ACL CAT,
//! `+@category`), and the command index that ACL rules address commands by.
//!
//! Redis gives categories per command in its JSON command files and adds some from the flags
//! (`setImplicitACLCategories`); larder derives them from the flags and the group, with the
//! exceptions below, and a test compares the result with redis-server 7.0.15's `ACL CAT`.

use crate::table::{flags::*, CommandSpec, Group, Registry};

/// ACL categories in Redis's order; a category's bit is its index here.
pub const NAMES: &[&str] = &[
    "@keyspace",
    "@read",
    "@write",
    "@set",
    "@sortedset",
    "@list",
    "@hash",
    "@string",
    "@bitmap",
    "@hyperloglog",
    "@geo",
    "@stream",
    "@pubsub",
    "@admin",
    "@fast",
    "@slow",
    "@blocking",
    "@dangerous",
    "@connection",
    "@transaction",
    "@scripting",
];

/// The bit of a category by name, without the `@`, any case (`ACLGetCommandCategoryFlagByName`).
pub fn bit(name: &[u8]) -> Option<u32> {
    NAMES
        .iter()
        .position(|n| n.as_bytes()[1..].eq_ignore_ascii_case(name))
        .map(|i| 1 << i)
}

fn mask_of(name: &str) -> u32 {
    NAMES.iter().position(|n| *n == name).map_or(0, |i| 1 << i)
}

/// Categories Redis gives by name rather than by flag or group, by top-level name (a
/// container's subcommands included).
const EXTRA: &[(&str, &str)] = &[
    ("command", "@connection"),
    ("info", "@dangerous"),
    ("keys", "@dangerous"),
    ("flushdb", "@dangerous"),
    ("flushall", "@dangerous"),
    ("swapdb", "@dangerous"),
    ("sort", "@dangerous"),
    ("sort_ro", "@dangerous"),
    ("restore", "@dangerous"),
    ("migrate", "@dangerous"),
    ("role", "@dangerous"),
    ("role", "@admin"),
    ("lastsave", "@dangerous"),
    ("lastsave", "@admin"),
    ("dbsize", "@keyspace"),
    ("flushdb", "@keyspace"),
    ("flushall", "@keyspace"),
    ("swapdb", "@keyspace"),
    ("sort", "@list"),
    ("sort", "@set"),
    ("sort", "@sortedset"),
    ("sort_ro", "@list"),
    ("sort_ro", "@set"),
    ("sort_ro", "@sortedset"),
];

/// Categories the flags or the group would give that Redis does not, by full name.
const NOT: &[(&str, &str)] = &[
    ("sort", "@keyspace"),
    ("sort_ro", "@keyspace"),
    ("pubsub|help", "@pubsub"),
];

/// The categories of a command (`parent` set for a subcommand), as a bit mask over [`NAMES`]:
/// from the flags (`@write`, `@read`, `@admin` + `@dangerous`, `@fast` or else `@slow`, ...),
/// the group (not for containers, which have no category of their own), [`EXTRA`] and
/// [`NOT`].
pub fn mask(spec: &CommandSpec, parent: Option<&CommandSpec>) -> u32 {
    let is_container = parent.is_none() && !spec.subcommands.is_empty();
    let mut m = 0;
    // The server group's "@admin" comes from the ADMIN flag, not from the group.
    if !is_container && spec.group != Group::Server {
        m |= mask_of(spec.group.acl_category());
    }
    for (flag, cat) in [
        (WRITE, "@write"),
        (READONLY, "@read"),
        (ADMIN, "@admin"),
        (ADMIN, "@dangerous"),
        (PUBSUB, "@pubsub"),
        (FAST, "@fast"),
        (BLOCKING, "@blocking"),
    ] {
        if spec.has(flag) {
            m |= mask_of(cat);
        }
    }
    // Redis's `setImplicitACLCategories`: read-only scripts are not `@read`.
    if m & mask_of("@scripting") != 0 {
        m &= !mask_of("@read");
    }
    if !spec.has(FAST) {
        m |= mask_of("@slow");
    }
    if !is_container {
        let top = parent.unwrap_or(spec).name;
        for (name, cat) in EXTRA {
            if *name == top {
                m |= mask_of(cat);
            }
        }
        let full = match parent {
            Some(p) => format!("{}|{}", p.name, spec.name),
            None => spec.name.to_string(),
        };
        for (name, cat) in NOT {
            if *name == full {
                m &= !mask_of(cat);
            }
        }
    }
    m
}

/// The category names of a mask, in Redis's order.
pub fn names(mask: u32) -> Vec<&'static str> {
    NAMES
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect()
}

/// One command or subcommand as ACL rules see it.
pub struct Entry {
    /// `get`, `config|get`.
    pub full_name: String,
    pub mask: u32,
    /// A subcommand's container.
    pub parent: Option<usize>,
    /// A container's subcommands (ids).
    pub subs: std::ops::Range<usize>,
}

/// Every command by ACL id. A command or subcommand's id is its registry stats index, so the
/// check indexes a selector's bit set with `Resolved::stat_index` directly; containers, which
/// have no stats index, get the ids after those.
pub struct CommandIndex {
    entries: Vec<Entry>,
    /// Ids in the order rules describe them: each top-level command, then its subcommands.
    order: Vec<usize>,
    by_name: hashbrown::HashMap<String, usize>,
}

impl CommandIndex {
    pub fn new(registry: &Registry) -> CommandIndex {
        let all = registry.all();
        let mut entries: Vec<Option<Entry>> = (0..all.len()).map(|_| None).collect();
        let mut order = Vec::new();
        for (top_index, &spec) in registry.commands().iter().enumerate() {
            let base = registry.stat_base(top_index);
            if spec.subcommands.is_empty() {
                entries[base] = Some(Entry {
                    full_name: spec.name.to_string(),
                    mask: mask(spec, None),
                    parent: None,
                    subs: 0..0,
                });
                order.push(base);
                continue;
            }
            let id = entries.len();
            entries.push(Some(Entry {
                full_name: spec.name.to_string(),
                mask: mask(spec, None),
                parent: None,
                subs: base..base + spec.subcommands.len(),
            }));
            order.push(id);
            for (i, sub) in spec.subcommands.iter().enumerate() {
                entries[base + i] = Some(Entry {
                    full_name: format!("{}|{}", spec.name, sub.name),
                    mask: mask(sub, Some(spec)),
                    parent: Some(id),
                    subs: 0..0,
                });
                order.push(base + i);
            }
        }
        let entries: Vec<Entry> = entries.into_iter().flatten().collect();
        let by_name = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.full_name.clone(), i))
            .collect();
        CommandIndex {
            entries,
            order,
            by_name,
        }
    }

    /// How many ids there are (the size of a selector's bit set).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn entry(&self, id: usize) -> &Entry {
        &self.entries[id]
    }

    /// A command by name (`get`, `CONFIG|GET`), any case.
    pub fn find(&self, name: &[u8]) -> Option<usize> {
        let lower = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
        self.by_name.get(&lower).copied()
    }

    /// Ids in description order (top-level commands each followed by its subcommands).
    pub fn ordered(&self) -> &[usize] {
        &self.order
    }

    /// The full names of the commands in a category, in description order (ACL CAT).
    pub fn in_category(&self, mask: u32) -> impl Iterator<Item = &str> {
        self.order
            .iter()
            .map(|&id| &self.entries[id])
            .filter(move |e| e.mask & mask != 0)
            .map(|e| e.full_name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// redis-server 7.0.15's `ACL CAT <category>` for every category, one line each:
    /// `category: command command ...`.
    const REDIS_ACL_CAT: &str = include_str!("../../../../testdata/acl/redis-7.0.15-acl-cat.txt");

    #[test]
    fn categories_match_redis_for_shared_commands() {
        let registry = crate::registry();
        let index = CommandIndex::new(&registry);
        let mut redis: hashbrown::HashMap<&str, Vec<&str>> = hashbrown::HashMap::new();
        for line in REDIS_ACL_CAT.lines() {
            let Some((cat, cmds)) = line.split_once(':') else {
                continue;
            };
            for c in cmds.split_whitespace() {
                redis.entry(c).or_default().push(cat);
            }
        }
        let mut wrong = Vec::new();
        for &id in index.ordered() {
            let e = index.entry(id);
            let Some(cats) = redis.get(e.full_name.as_str()) else {
                continue;
            };
            let mut want: Vec<String> = cats.iter().map(|c| format!("@{c}")).collect();
            want.sort();
            let mut got: Vec<String> = names(e.mask).iter().map(|s| s.to_string()).collect();
            got.sort();
            if want != got {
                wrong.push(format!("{}: larder {got:?} redis {want:?}", e.full_name));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn index_ids_are_stats_indexes() {
        let registry = crate::registry();
        let index = CommandIndex::new(&registry);
        for (i, (name, _)) in registry.all().iter().enumerate() {
            assert_eq!(&index.entry(i).full_name, name);
        }
        let config = index.find(b"CONFIG").expect("config");
        let get = index.find(b"config|get").expect("config|get");
        assert!(index.entry(config).subs.contains(&get));
        assert_eq!(index.entry(get).parent, Some(config));
        assert!(bit(b"SLOW").is_some() && bit(b"nope").is_none());
    }
}
