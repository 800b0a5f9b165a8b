//! Redis 7.0.15's command tips and key specs, by full name, as its `COMMAND` reports them:
//! what larder's COMMAND INFO says about the commands both servers have. Written by
//! scripts/command_meta.py from a redis-server 7.0.15; do not edit by hand.

use super::command::{entry, index, keynum, keyword, noted, range, spec, Begin, Find, Meta};

#[rustfmt::skip]
pub(super) static META: &[Meta] = &[
    entry("acl", (0, 0, 0), &[], &[]),
    entry("acl|cat", (0, 0, 0), &[], &[]),
    entry("acl|deluser", (0, 0, 0), &[], &[]),
    entry("acl|dryrun", (0, 0, 0), &[], &[]),
    entry("acl|genpass", (0, 0, 0), &[], &[]),
    entry("acl|getuser", (0, 0, 0), &[], &[]),
    entry("acl|help", (0, 0, 0), &[], &[]),
    entry("acl|list", (0, 0, 0), &[], &[]),
    entry("acl|load", (0, 0, 0), &[], &[]),
    entry("acl|log", (0, 0, 0), &[], &[]),
    entry("acl|save", (0, 0, 0), &[], &[]),
    entry("acl|setuser", (0, 0, 0), &[], &[]),
    entry("acl|users", (0, 0, 0), &[], &[]),
    entry("acl|whoami", (0, 0, 0), &[], &[]),
    entry("append", (1, 1, 1), &[], &[
        spec(&["RW", "insert"], index(1), range(0, 1, 0)),
    ]),
    entry("asking", (0, 0, 0), &[], &[]),
    entry("auth", (0, 0, 0), &[], &[]),
    entry("bgrewriteaof", (0, 0, 0), &[], &[]),
    entry("bgsave", (0, 0, 0), &[], &[]),
    entry("bitcount", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("bitfield", (1, 1, 1), &[], &[
        noted(
            "This command allows both access and modification of the key",
            &["RW", "access", "update", "variable_flags"], index(1), range(0, 1, 0)),
    ]),
    entry("bitfield_ro", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("bitop", (2, -1, 1), &[], &[
        spec(&["OW", "update"], index(2), range(0, 1, 0)),
        spec(&["RO", "access"], index(3), range(-1, 1, 0)),
    ]),
    entry("bitpos", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("blmove", (1, 2, 1), &[], &[
        spec(&["RW", "access", "delete"], index(1), range(0, 1, 0)),
        spec(&["RW", "insert"], index(2), range(0, 1, 0)),
    ]),
    entry("blmpop", (0, 0, 0), &[], &[
        spec(&["RW", "access", "delete"], index(2), keynum(0, 1, 1)),
    ]),
    entry("blpop", (1, -2, 1), &[], &[
        spec(&["RW", "access", "delete"], index(1), range(-2, 1, 0)),
    ]),
    entry("brpop", (1, -2, 1), &[], &[
        spec(&["RW", "access", "delete"], index(1), range(-2, 1, 0)),
    ]),
    entry("brpoplpush", (1, 2, 1), &[], &[
        spec(&["RW", "access", "delete"], index(1), range(0, 1, 0)),
        spec(&["RW", "insert"], index(2), range(0, 1, 0)),
    ]),
    entry("bzmpop", (0, 0, 0), &[], &[
        spec(&["RW", "access", "delete"], index(2), keynum(0, 1, 1)),
    ]),
    entry("bzpopmax", (1, -2, 1), &[], &[
        spec(&["RW", "access", "delete"], index(1), range(-2, 1, 0)),
    ]),
    entry("bzpopmin", (1, -2, 1), &[], &[
        spec(&["RW", "access", "delete"], index(1), range(-2, 1, 0)),
    ]),
    entry("client", (0, 0, 0), &[], &[]),
    entry("client|caching", (0, 0, 0), &[], &[]),
    entry("client|getname", (0, 0, 0), &[], &[]),
    entry("client|getredir", (0, 0, 0), &[], &[]),
    entry("client|help", (0, 0, 0), &[], &[]),
    entry("client|id", (0, 0, 0), &[], &[]),
    entry("client|info", (0, 0, 0), &["nondeterministic_output"], &[]),
    entry("client|kill", (0, 0, 0), &[], &[]),
    entry("client|list", (0, 0, 0), &["nondeterministic_output"], &[]),
    entry("client|no-evict", (0, 0, 0), &[], &[]),
    entry("client|pause", (0, 0, 0), &[], &[]),
    entry("client|reply", (0, 0, 0), &[], &[]),
    entry("client|setname", (0, 0, 0), &[], &[]),
    entry("client|tracking", (0, 0, 0), &[], &[]),
    entry("client|trackinginfo", (0, 0, 0), &[], &[]),
    entry("client|unblock", (0, 0, 0), &[], &[]),
    entry("client|unpause", (0, 0, 0), &[], &[]),
    entry("cluster", (0, 0, 0), &[], &[]),
    entry("cluster|addslots", (0, 0, 0), &[], &[]),
    entry("cluster|addslotsrange", (0, 0, 0), &[], &[]),
    entry("cluster|bumpepoch", (0, 0, 0), &["nondeterministic_output"], &[]),
    entry("cluster|count-failure-reports", (0, 0, 0), &["nondeterministic_output"], &[]),
    entry("cluster|countkeysinslot", (0, 0, 0), &[], &[]),
    entry("cluster|delslots", (0, 0, 0), &[], &[]),
    entry("cluster|delslotsrange", (0, 0, 0), &[], &[]),
    entry("cluster|failover", (0, 0, 0), &[], &[]),
    entry("cluster|flushslots", (0, 0, 0), &[], &[]),
    entry("cluster|forget", (0, 0, 0), &[], &[]),
    entry("cluster|getkeysinslot", (0, 0, 0), &["nondeterministic_output"], &[]),
    entry("cluster|help", (0, 0, 0), &[], &[]),
    entry("cluster|info", (0, 0, 0), &["nondeterministic_output"], &[]),
    entry("cluster|keyslot", (0, 0, 0), &[], &[]),
    entry("cluster|links", (0, 0, 0), &["nondeterministic_output"], &[]),
    entry("cluster|meet", (0, 0, 0), &[], &[]),
    entry("cluster|myid", (0, 0, 0), &[], &[]),
    entry("cluster|nodes", (0, 0, 0), &["nondeterministic_output"], &[]),
    entry("cluster|replicas", (0, 0, 0), &["nondeterministic_output"], &[]),
    entry("cluster|replicate", (0, 0, 0), &[], &[]),
    entry("cluster|reset", (0, 0, 0), &[], &[]),
    entry("cluster|saveconfig", (0, 0, 0), &[], &[]),
    entry("cluster|set-config-epoch", (0, 0, 0), &[], &[]),
    entry("cluster|setslot", (0, 0, 0), &[], &[]),
    entry("cluster|shards", (0, 0, 0), &["nondeterministic_output"], &[]),
    entry("cluster|slaves", (0, 0, 0), &["nondeterministic_output"], &[]),
    entry("cluster|slots", (0, 0, 0), &["nondeterministic_output"], &[]),
    entry("command", (0, 0, 0), &["nondeterministic_output_order"], &[]),
    entry("command|count", (0, 0, 0), &[], &[]),
    entry("command|docs", (0, 0, 0), &["nondeterministic_output_order"], &[]),
    entry("command|getkeys", (0, 0, 0), &[], &[]),
    entry("command|getkeysandflags", (0, 0, 0), &[], &[]),
    entry("command|help", (0, 0, 0), &[], &[]),
    entry("command|info", (0, 0, 0), &["nondeterministic_output_order"], &[]),
    entry("command|list", (0, 0, 0), &["nondeterministic_output_order"], &[]),
    entry("config", (0, 0, 0), &[], &[]),
    entry("config|get", (0, 0, 0), &[], &[]),
    entry("config|help", (0, 0, 0), &[], &[]),
    entry("config|resetstat", (0, 0, 0), &[], &[]),
    entry("config|rewrite", (0, 0, 0), &[], &[]),
    entry("config|set", (0, 0, 0), &["request_policy:all_nodes", "response_policy:all_succeeded"], &[]),
    entry("copy", (1, 2, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
        spec(&["OW", "update"], index(2), range(0, 1, 0)),
    ]),
    entry("dbsize", (0, 0, 0), &["request_policy:all_shards", "response_policy:agg_sum"], &[]),
    entry("debug", (0, 0, 0), &[], &[]),
    entry("decr", (1, 1, 1), &[], &[
        spec(&["RW", "access", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("decrby", (1, 1, 1), &[], &[
        spec(&["RW", "access", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("del", (1, -1, 1), &["request_policy:multi_shard", "response_policy:agg_sum"], &[
        spec(&["RM", "delete"], index(1), range(-1, 1, 0)),
    ]),
    entry("discard", (0, 0, 0), &[], &[]),
    entry("dump", (1, 1, 1), &["nondeterministic_output"], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("echo", (0, 0, 0), &[], &[]),
    entry("eval", (0, 0, 0), &[], &[
        noted(
            "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
            &["RW", "access", "update"], index(2), keynum(0, 1, 1)),
    ]),
    entry("eval_ro", (0, 0, 0), &[], &[
        noted(
            "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
            &["RO", "access"], index(2), keynum(0, 1, 1)),
    ]),
    entry("evalsha", (0, 0, 0), &[], &[
        spec(&["RW", "access", "update"], index(2), keynum(0, 1, 1)),
    ]),
    entry("evalsha_ro", (0, 0, 0), &[], &[
        spec(&["RO", "access"], index(2), keynum(0, 1, 1)),
    ]),
    entry("exec", (0, 0, 0), &[], &[]),
    entry("exists", (1, -1, 1), &["request_policy:multi_shard", "response_policy:agg_sum"], &[
        spec(&["RO"], index(1), range(-1, 1, 0)),
    ]),
    entry("expire", (1, 1, 1), &[], &[
        spec(&["RW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("expireat", (1, 1, 1), &[], &[
        spec(&["RW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("expiretime", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("failover", (0, 0, 0), &[], &[]),
    entry("fcall", (0, 0, 0), &[], &[
        noted(
            "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
            &["RW", "access", "update"], index(2), keynum(0, 1, 1)),
    ]),
    entry("fcall_ro", (0, 0, 0), &[], &[
        noted(
            "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
            &["RO", "access"], index(2), keynum(0, 1, 1)),
    ]),
    entry("flushall", (0, 0, 0), &["request_policy:all_shards", "response_policy:all_succeeded"], &[]),
    entry("flushdb", (0, 0, 0), &["request_policy:all_shards", "response_policy:all_succeeded"], &[]),
    entry("function", (0, 0, 0), &[], &[]),
    entry("function|delete", (0, 0, 0), &["request_policy:all_shards", "response_policy:all_succeeded"], &[]),
    entry("function|dump", (0, 0, 0), &[], &[]),
    entry("function|flush", (0, 0, 0), &["request_policy:all_shards", "response_policy:all_succeeded"], &[]),
    entry("function|help", (0, 0, 0), &[], &[]),
    entry("function|kill", (0, 0, 0), &["request_policy:all_shards", "response_policy:one_succeeded"], &[]),
    entry("function|list", (0, 0, 0), &["nondeterministic_output_order"], &[]),
    entry("function|load", (0, 0, 0), &["request_policy:all_shards", "response_policy:all_succeeded"], &[]),
    entry("function|restore", (0, 0, 0), &["request_policy:all_shards", "response_policy:all_succeeded"], &[]),
    entry("function|stats", (0, 0, 0), &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"], &[]),
    entry("geoadd", (1, 1, 1), &[], &[
        spec(&["RW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("geodist", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("geohash", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("geopos", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("georadius", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
        spec(&["OW", "update"], keyword("STORE", 6), range(0, 1, 0)),
        spec(&["OW", "update"], keyword("STOREDIST", 6), range(0, 1, 0)),
    ]),
    entry("georadius_ro", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("georadiusbymember", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
        spec(&["OW", "update"], keyword("STORE", 5), range(0, 1, 0)),
        spec(&["OW", "update"], keyword("STOREDIST", 5), range(0, 1, 0)),
    ]),
    entry("georadiusbymember_ro", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("geosearch", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("geosearchstore", (1, 2, 1), &[], &[
        spec(&["OW", "update"], index(1), range(0, 1, 0)),
        spec(&["RO", "access"], index(2), range(0, 1, 0)),
    ]),
    entry("get", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("getbit", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("getdel", (1, 1, 1), &[], &[
        spec(&["RW", "access", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("getex", (1, 1, 1), &[], &[
        noted(
            "RW and UPDATE because it changes the TTL",
            &["RW", "access", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("getrange", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("getset", (1, 1, 1), &[], &[
        spec(&["RW", "access", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("hdel", (1, 1, 1), &[], &[
        spec(&["RW", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("hello", (0, 0, 0), &[], &[]),
    entry("hexists", (1, 1, 1), &[], &[
        spec(&["RO"], index(1), range(0, 1, 0)),
    ]),
    entry("hget", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("hgetall", (1, 1, 1), &["nondeterministic_output_order"], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("hincrby", (1, 1, 1), &[], &[
        spec(&["RW", "access", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("hincrbyfloat", (1, 1, 1), &[], &[
        spec(&["RW", "access", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("hkeys", (1, 1, 1), &["nondeterministic_output_order"], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("hlen", (1, 1, 1), &[], &[
        spec(&["RO"], index(1), range(0, 1, 0)),
    ]),
    entry("hmget", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("hmset", (1, 1, 1), &[], &[
        spec(&["RW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("hrandfield", (1, 1, 1), &["nondeterministic_output"], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("hscan", (1, 1, 1), &["nondeterministic_output"], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("hset", (1, 1, 1), &[], &[
        spec(&["RW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("hsetnx", (1, 1, 1), &[], &[
        spec(&["RW", "insert"], index(1), range(0, 1, 0)),
    ]),
    entry("hstrlen", (1, 1, 1), &[], &[
        spec(&["RO"], index(1), range(0, 1, 0)),
    ]),
    entry("hvals", (1, 1, 1), &["nondeterministic_output_order"], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("incr", (1, 1, 1), &[], &[
        spec(&["RW", "access", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("incrby", (1, 1, 1), &[], &[
        spec(&["RW", "access", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("incrbyfloat", (1, 1, 1), &[], &[
        spec(&["RW", "access", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("info", (0, 0, 0), &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"], &[]),
    entry("keys", (0, 0, 0), &["request_policy:all_shards", "nondeterministic_output_order"], &[]),
    entry("lastsave", (0, 0, 0), &["nondeterministic_output"], &[]),
    entry("latency", (0, 0, 0), &[], &[]),
    entry("latency|doctor", (0, 0, 0), &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"], &[]),
    entry("latency|graph", (0, 0, 0), &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"], &[]),
    entry("latency|help", (0, 0, 0), &[], &[]),
    entry("latency|histogram", (0, 0, 0), &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"], &[]),
    entry("latency|history", (0, 0, 0), &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"], &[]),
    entry("latency|latest", (0, 0, 0), &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"], &[]),
    entry("latency|reset", (0, 0, 0), &["request_policy:all_nodes", "response_policy:all_succeeded"], &[]),
    entry("lcs", (1, 2, 1), &[], &[
        spec(&["RO", "access"], index(1), range(1, 1, 0)),
    ]),
    entry("lindex", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("linsert", (1, 1, 1), &[], &[
        spec(&["RW", "insert"], index(1), range(0, 1, 0)),
    ]),
    entry("llen", (1, 1, 1), &[], &[
        spec(&["RO"], index(1), range(0, 1, 0)),
    ]),
    entry("lmove", (1, 2, 1), &[], &[
        spec(&["RW", "access", "delete"], index(1), range(0, 1, 0)),
        spec(&["RW", "insert"], index(2), range(0, 1, 0)),
    ]),
    entry("lmpop", (0, 0, 0), &[], &[
        spec(&["RW", "access", "delete"], index(1), keynum(0, 1, 1)),
    ]),
    entry("lolwut", (0, 0, 0), &[], &[]),
    entry("lpop", (1, 1, 1), &[], &[
        spec(&["RW", "access", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("lpos", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("lpush", (1, 1, 1), &[], &[
        spec(&["RW", "insert"], index(1), range(0, 1, 0)),
    ]),
    entry("lpushx", (1, 1, 1), &[], &[
        spec(&["RW", "insert"], index(1), range(0, 1, 0)),
    ]),
    entry("lrange", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("lrem", (1, 1, 1), &[], &[
        spec(&["RW", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("lset", (1, 1, 1), &[], &[
        spec(&["RW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("ltrim", (1, 1, 1), &[], &[
        spec(&["RW", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("memory", (0, 0, 0), &[], &[]),
    entry("memory|doctor", (0, 0, 0), &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"], &[]),
    entry("memory|help", (0, 0, 0), &[], &[]),
    entry("memory|malloc-stats", (0, 0, 0), &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"], &[]),
    entry("memory|purge", (0, 0, 0), &["request_policy:all_shards", "response_policy:all_succeeded"], &[]),
    entry("memory|stats", (0, 0, 0), &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"], &[]),
    entry("memory|usage", (2, 2, 1), &[], &[
        spec(&["RO"], index(2), range(0, 1, 0)),
    ]),
    entry("mget", (1, -1, 1), &["request_policy:multi_shard"], &[
        spec(&["RO", "access"], index(1), range(-1, 1, 0)),
    ]),
    entry("migrate", (3, 3, 1), &["nondeterministic_output"], &[
        spec(&["RW", "access", "delete"], index(3), range(0, 1, 0)),
        spec(&["RW", "access", "delete", "incomplete"], keyword("KEYS", -2), range(-1, 1, 0)),
    ]),
    entry("module", (0, 0, 0), &[], &[]),
    entry("module|help", (0, 0, 0), &[], &[]),
    entry("module|list", (0, 0, 0), &["nondeterministic_output_order"], &[]),
    entry("module|load", (0, 0, 0), &[], &[]),
    entry("module|loadex", (0, 0, 0), &[], &[]),
    entry("module|unload", (0, 0, 0), &[], &[]),
    entry("monitor", (0, 0, 0), &[], &[]),
    entry("move", (1, 1, 1), &[], &[
        spec(&["RW", "access", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("mset", (1, -1, 2), &["request_policy:multi_shard", "response_policy:all_succeeded"], &[
        spec(&["OW", "update"], index(1), range(-1, 2, 0)),
    ]),
    entry("msetnx", (1, -1, 2), &["request_policy:multi_shard", "response_policy:agg_min"], &[
        spec(&["OW", "insert"], index(1), range(-1, 2, 0)),
    ]),
    entry("multi", (0, 0, 0), &[], &[]),
    entry("object", (0, 0, 0), &[], &[]),
    entry("object|encoding", (2, 2, 1), &["nondeterministic_output"], &[
        spec(&["RO"], index(2), range(0, 1, 0)),
    ]),
    entry("object|freq", (2, 2, 1), &["nondeterministic_output"], &[
        spec(&["RO"], index(2), range(0, 1, 0)),
    ]),
    entry("object|help", (0, 0, 0), &[], &[]),
    entry("object|idletime", (2, 2, 1), &["nondeterministic_output"], &[
        spec(&["RO"], index(2), range(0, 1, 0)),
    ]),
    entry("object|refcount", (2, 2, 1), &["nondeterministic_output"], &[
        spec(&["RO"], index(2), range(0, 1, 0)),
    ]),
    entry("persist", (1, 1, 1), &[], &[
        spec(&["RW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("pexpire", (1, 1, 1), &[], &[
        spec(&["RW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("pexpireat", (1, 1, 1), &[], &[
        spec(&["RW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("pexpiretime", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("pfadd", (1, 1, 1), &[], &[
        spec(&["RW", "insert"], index(1), range(0, 1, 0)),
    ]),
    entry("pfcount", (1, -1, 1), &[], &[
        noted(
            "RW because it may change the internal representation of the key, and propagate to replicas",
            &["RW", "access"], index(1), range(-1, 1, 0)),
    ]),
    entry("pfdebug", (2, 2, 1), &[], &[
        spec(&["RW", "access"], index(2), range(0, 1, 0)),
    ]),
    entry("pfmerge", (1, -1, 1), &[], &[
        spec(&["RW", "access", "insert"], index(1), range(0, 1, 0)),
        spec(&["RO", "access"], index(2), range(-1, 1, 0)),
    ]),
    entry("pfselftest", (0, 0, 0), &[], &[]),
    entry("ping", (0, 0, 0), &["request_policy:all_shards", "response_policy:all_succeeded"], &[]),
    entry("psetex", (1, 1, 1), &[], &[
        spec(&["OW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("psubscribe", (0, 0, 0), &[], &[]),
    entry("psync", (0, 0, 0), &[], &[]),
    entry("pttl", (1, 1, 1), &["nondeterministic_output"], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("publish", (0, 0, 0), &[], &[]),
    entry("pubsub", (0, 0, 0), &[], &[]),
    entry("pubsub|channels", (0, 0, 0), &[], &[]),
    entry("pubsub|help", (0, 0, 0), &[], &[]),
    entry("pubsub|numpat", (0, 0, 0), &[], &[]),
    entry("pubsub|numsub", (0, 0, 0), &[], &[]),
    entry("pubsub|shardchannels", (0, 0, 0), &[], &[]),
    entry("pubsub|shardnumsub", (0, 0, 0), &[], &[]),
    entry("punsubscribe", (0, 0, 0), &[], &[]),
    entry("quit", (0, 0, 0), &[], &[]),
    entry("randomkey", (0, 0, 0), &["request_policy:all_shards", "nondeterministic_output"], &[]),
    entry("readonly", (0, 0, 0), &[], &[]),
    entry("readwrite", (0, 0, 0), &[], &[]),
    entry("rename", (1, 2, 1), &[], &[
        spec(&["RW", "access", "delete"], index(1), range(0, 1, 0)),
        spec(&["OW", "update"], index(2), range(0, 1, 0)),
    ]),
    entry("renamenx", (1, 2, 1), &[], &[
        spec(&["RW", "access", "delete"], index(1), range(0, 1, 0)),
        spec(&["OW", "insert"], index(2), range(0, 1, 0)),
    ]),
    entry("replconf", (0, 0, 0), &[], &[]),
    entry("replicaof", (0, 0, 0), &[], &[]),
    entry("reset", (0, 0, 0), &[], &[]),
    entry("restore", (1, 1, 1), &[], &[
        spec(&["OW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("restore-asking", (1, 1, 1), &[], &[
        spec(&["OW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("role", (0, 0, 0), &[], &[]),
    entry("rpop", (1, 1, 1), &[], &[
        spec(&["RW", "access", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("rpoplpush", (1, 2, 1), &[], &[
        spec(&["RW", "access", "delete"], index(1), range(0, 1, 0)),
        spec(&["RW", "insert"], index(2), range(0, 1, 0)),
    ]),
    entry("rpush", (1, 1, 1), &[], &[
        spec(&["RW", "insert"], index(1), range(0, 1, 0)),
    ]),
    entry("rpushx", (1, 1, 1), &[], &[
        spec(&["RW", "insert"], index(1), range(0, 1, 0)),
    ]),
    entry("sadd", (1, 1, 1), &[], &[
        spec(&["RW", "insert"], index(1), range(0, 1, 0)),
    ]),
    entry("save", (0, 0, 0), &[], &[]),
    entry("scan", (0, 0, 0), &["nondeterministic_output", "request_policy:special"], &[]),
    entry("scard", (1, 1, 1), &[], &[
        spec(&["RO"], index(1), range(0, 1, 0)),
    ]),
    entry("script", (0, 0, 0), &[], &[]),
    entry("script|debug", (0, 0, 0), &[], &[]),
    entry("script|exists", (0, 0, 0), &["request_policy:all_shards", "response_policy:agg_logical_and"], &[]),
    entry("script|flush", (0, 0, 0), &["request_policy:all_nodes", "response_policy:all_succeeded"], &[]),
    entry("script|help", (0, 0, 0), &[], &[]),
    entry("script|kill", (0, 0, 0), &["request_policy:all_shards", "response_policy:one_succeeded"], &[]),
    entry("script|load", (0, 0, 0), &["request_policy:all_nodes", "response_policy:all_succeeded"], &[]),
    entry("sdiff", (1, -1, 1), &["nondeterministic_output_order"], &[
        spec(&["RO", "access"], index(1), range(-1, 1, 0)),
    ]),
    entry("sdiffstore", (1, -1, 1), &[], &[
        spec(&["OW", "update"], index(1), range(0, 1, 0)),
        spec(&["RO", "access"], index(2), range(-1, 1, 0)),
    ]),
    entry("select", (0, 0, 0), &[], &[]),
    entry("set", (1, 1, 1), &[], &[
        noted(
            "RW and ACCESS due to the optional `GET` argument",
            &["RW", "access", "update", "variable_flags"], index(1), range(0, 1, 0)),
    ]),
    entry("setbit", (1, 1, 1), &[], &[
        spec(&["RW", "access", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("setex", (1, 1, 1), &[], &[
        spec(&["OW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("setnx", (1, 1, 1), &[], &[
        spec(&["OW", "insert"], index(1), range(0, 1, 0)),
    ]),
    entry("setrange", (1, 1, 1), &[], &[
        spec(&["RW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("shutdown", (0, 0, 0), &[], &[]),
    entry("sinter", (1, -1, 1), &["nondeterministic_output_order"], &[
        spec(&["RO", "access"], index(1), range(-1, 1, 0)),
    ]),
    entry("sintercard", (0, 0, 0), &[], &[
        spec(&["RO", "access"], index(1), keynum(0, 1, 1)),
    ]),
    entry("sinterstore", (1, -1, 1), &[], &[
        spec(&["RW", "update"], index(1), range(0, 1, 0)),
        spec(&["RO", "access"], index(2), range(-1, 1, 0)),
    ]),
    entry("sismember", (1, 1, 1), &[], &[
        spec(&["RO"], index(1), range(0, 1, 0)),
    ]),
    entry("slaveof", (0, 0, 0), &[], &[]),
    entry("slowlog", (0, 0, 0), &[], &[]),
    entry("slowlog|get", (0, 0, 0), &["request_policy:all_nodes", "nondeterministic_output"], &[]),
    entry("slowlog|help", (0, 0, 0), &[], &[]),
    entry("slowlog|len", (0, 0, 0), &["request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"], &[]),
    entry("slowlog|reset", (0, 0, 0), &["request_policy:all_nodes", "response_policy:all_succeeded"], &[]),
    entry("smembers", (1, 1, 1), &["nondeterministic_output_order"], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("smismember", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("smove", (1, 2, 1), &[], &[
        spec(&["RW", "access", "delete"], index(1), range(0, 1, 0)),
        spec(&["RW", "insert"], index(2), range(0, 1, 0)),
    ]),
    entry("sort", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
        noted(
            "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort",
            &["RO", "access"], Begin::Unknown, Find::Unknown),
        noted(
            "For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array",
            &["OW", "update"], Begin::Unknown, Find::Unknown),
    ]),
    entry("sort_ro", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
        noted(
            "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort",
            &["RO", "access"], Begin::Unknown, Find::Unknown),
    ]),
    entry("spop", (1, 1, 1), &["nondeterministic_output"], &[
        spec(&["RW", "access", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("spublish", (1, 1, 1), &[], &[
        spec(&["not_key"], index(1), range(0, 1, 0)),
    ]),
    entry("srandmember", (1, 1, 1), &["nondeterministic_output"], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("srem", (1, 1, 1), &[], &[
        spec(&["RW", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("sscan", (1, 1, 1), &["nondeterministic_output"], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("ssubscribe", (1, -1, 1), &[], &[
        spec(&["not_key"], index(1), range(-1, 1, 0)),
    ]),
    entry("strlen", (1, 1, 1), &[], &[
        spec(&["RO"], index(1), range(0, 1, 0)),
    ]),
    entry("subscribe", (0, 0, 0), &[], &[]),
    entry("substr", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("sunion", (1, -1, 1), &["nondeterministic_output_order"], &[
        spec(&["RO", "access"], index(1), range(-1, 1, 0)),
    ]),
    entry("sunionstore", (1, -1, 1), &[], &[
        spec(&["OW", "update"], index(1), range(0, 1, 0)),
        spec(&["RO", "access"], index(2), range(-1, 1, 0)),
    ]),
    entry("sunsubscribe", (1, -1, 1), &[], &[
        spec(&["not_key"], index(1), range(-1, 1, 0)),
    ]),
    entry("swapdb", (0, 0, 0), &[], &[]),
    entry("sync", (0, 0, 0), &[], &[]),
    entry("time", (0, 0, 0), &["nondeterministic_output"], &[]),
    entry("touch", (1, -1, 1), &["request_policy:multi_shard", "response_policy:agg_sum"], &[
        spec(&["RO"], index(1), range(-1, 1, 0)),
    ]),
    entry("ttl", (1, 1, 1), &["nondeterministic_output"], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("type", (1, 1, 1), &[], &[
        spec(&["RO"], index(1), range(0, 1, 0)),
    ]),
    entry("unlink", (1, -1, 1), &["request_policy:multi_shard", "response_policy:agg_sum"], &[
        spec(&["RM", "delete"], index(1), range(-1, 1, 0)),
    ]),
    entry("unsubscribe", (0, 0, 0), &[], &[]),
    entry("unwatch", (0, 0, 0), &[], &[]),
    entry("wait", (0, 0, 0), &["request_policy:all_shards", "response_policy:agg_min"], &[]),
    entry("watch", (1, -1, 1), &[], &[
        spec(&["RO"], index(1), range(-1, 1, 0)),
    ]),
    entry("xack", (1, 1, 1), &[], &[
        spec(&["RW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("xadd", (1, 1, 1), &["nondeterministic_output"], &[
        noted(
            "UPDATE instead of INSERT because of the optional trimming feature",
            &["RW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("xautoclaim", (1, 1, 1), &["nondeterministic_output"], &[
        spec(&["RW", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("xclaim", (1, 1, 1), &["nondeterministic_output"], &[
        spec(&["RW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("xdel", (1, 1, 1), &[], &[
        spec(&["RW", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("xgroup", (0, 0, 0), &[], &[]),
    entry("xgroup|create", (2, 2, 1), &[], &[
        spec(&["RW", "insert"], index(2), range(0, 1, 0)),
    ]),
    entry("xgroup|createconsumer", (2, 2, 1), &[], &[
        spec(&["RW", "insert"], index(2), range(0, 1, 0)),
    ]),
    entry("xgroup|delconsumer", (2, 2, 1), &[], &[
        spec(&["RW", "delete"], index(2), range(0, 1, 0)),
    ]),
    entry("xgroup|destroy", (2, 2, 1), &[], &[
        spec(&["RW", "delete"], index(2), range(0, 1, 0)),
    ]),
    entry("xgroup|help", (0, 0, 0), &[], &[]),
    entry("xgroup|setid", (2, 2, 1), &[], &[
        spec(&["RW", "update"], index(2), range(0, 1, 0)),
    ]),
    entry("xinfo", (0, 0, 0), &[], &[]),
    entry("xinfo|consumers", (2, 2, 1), &["nondeterministic_output"], &[
        spec(&["RO", "access"], index(2), range(0, 1, 0)),
    ]),
    entry("xinfo|groups", (2, 2, 1), &[], &[
        spec(&["RO", "access"], index(2), range(0, 1, 0)),
    ]),
    entry("xinfo|help", (0, 0, 0), &[], &[]),
    entry("xinfo|stream", (2, 2, 1), &[], &[
        spec(&["RO", "access"], index(2), range(0, 1, 0)),
    ]),
    entry("xlen", (1, 1, 1), &[], &[
        spec(&["RO"], index(1), range(0, 1, 0)),
    ]),
    entry("xpending", (1, 1, 1), &["nondeterministic_output"], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("xrange", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("xread", (0, 0, 0), &[], &[
        spec(&["RO", "access"], keyword("STREAMS", 1), range(-1, 1, 2)),
    ]),
    entry("xreadgroup", (0, 0, 0), &[], &[
        spec(&["RO", "access"], keyword("STREAMS", 4), range(-1, 1, 2)),
    ]),
    entry("xrevrange", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("xsetid", (1, 1, 1), &[], &[
        spec(&["RW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("xtrim", (1, 1, 1), &["nondeterministic_output"], &[
        spec(&["RW", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("zadd", (1, 1, 1), &[], &[
        spec(&["RW", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("zcard", (1, 1, 1), &[], &[
        spec(&["RO"], index(1), range(0, 1, 0)),
    ]),
    entry("zcount", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("zdiff", (0, 0, 0), &[], &[
        spec(&["RO", "access"], index(1), keynum(0, 1, 1)),
    ]),
    entry("zdiffstore", (1, 1, 1), &[], &[
        spec(&["OW", "update"], index(1), range(0, 1, 0)),
        spec(&["RO", "access"], index(2), keynum(0, 1, 1)),
    ]),
    entry("zincrby", (1, 1, 1), &[], &[
        spec(&["RW", "access", "update"], index(1), range(0, 1, 0)),
    ]),
    entry("zinter", (0, 0, 0), &[], &[
        spec(&["RO", "access"], index(1), keynum(0, 1, 1)),
    ]),
    entry("zintercard", (0, 0, 0), &[], &[
        spec(&["RO", "access"], index(1), keynum(0, 1, 1)),
    ]),
    entry("zinterstore", (1, 1, 1), &[], &[
        spec(&["OW", "update"], index(1), range(0, 1, 0)),
        spec(&["RO", "access"], index(2), keynum(0, 1, 1)),
    ]),
    entry("zlexcount", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("zmpop", (0, 0, 0), &[], &[
        spec(&["RW", "access", "delete"], index(1), keynum(0, 1, 1)),
    ]),
    entry("zmscore", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("zpopmax", (1, 1, 1), &[], &[
        spec(&["RW", "access", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("zpopmin", (1, 1, 1), &[], &[
        spec(&["RW", "access", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("zrandmember", (1, 1, 1), &["nondeterministic_output"], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("zrange", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("zrangebylex", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("zrangebyscore", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("zrangestore", (1, 2, 1), &[], &[
        spec(&["OW", "update"], index(1), range(0, 1, 0)),
        spec(&["RO", "access"], index(2), range(0, 1, 0)),
    ]),
    entry("zrank", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("zrem", (1, 1, 1), &[], &[
        spec(&["RW", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("zremrangebylex", (1, 1, 1), &[], &[
        spec(&["RW", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("zremrangebyrank", (1, 1, 1), &[], &[
        spec(&["RW", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("zremrangebyscore", (1, 1, 1), &[], &[
        spec(&["RW", "delete"], index(1), range(0, 1, 0)),
    ]),
    entry("zrevrange", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("zrevrangebylex", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("zrevrangebyscore", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("zrevrank", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("zscan", (1, 1, 1), &["nondeterministic_output"], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("zscore", (1, 1, 1), &[], &[
        spec(&["RO", "access"], index(1), range(0, 1, 0)),
    ]),
    entry("zunion", (0, 0, 0), &[], &[
        spec(&["RO", "access"], index(1), keynum(0, 1, 1)),
    ]),
    entry("zunionstore", (1, 1, 1), &[], &[
        spec(&["OW", "update"], index(1), range(0, 1, 0)),
        spec(&["RO", "access"], index(2), keynum(0, 1, 1)),
    ]),
];
