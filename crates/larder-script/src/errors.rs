//! The error texts scripts produce, byte for byte as Redis 7.0.15 writes them
//! (`script_lua.c`, `eval.c`, `function_lua.c`, `functions.c`).

/// The error a redis.call / redis.pcall argument list without arguments gets.
pub const NO_ARGUMENTS: &str = "Please specify at least one argument for this redis lib call";
/// The error for an argument that is neither a string nor a number.
pub const BAD_ARGUMENT: &str = "Lua redis lib command arguments must be strings or integers";
/// redis.call outside a script run (e.g. kept by a library and called while it loads).
pub const CALL_OUTSIDE_RUN: &str = "redis.call/pcall can only be called inside a script invocation";
/// SCRIPT KILL / FUNCTION KILL / SHUTDOWN NOSAVE ended the script.
pub const KILLED: &str = "Script killed by user with SCRIPT KILL...";
/// A library ran past the load time limit.
pub const LOAD_TIMEOUT: &str = "FUNCTION LOAD timeout";
/// What `lua_to_reply` writes for a value nested deeper than Redis's Lua stack allows.
pub const STACK_LIMIT: &str = "ERR reached lua stack limit";

/// The text of an error table built from `buf` as Redis's `luaPushErrorBuff` builds it:
/// "-CODE msg" keeps CODE, anything else gets the generic "ERR" code; trailing CR/LF go.
pub fn error_table_text(buf: &str) -> String {
    let (code, msg) = match buf.strip_prefix('-') {
        Some(rest) => match rest.split_once(' ') {
            Some((code, msg)) => (code, msg),
            None => ("ERR", rest),
        },
        None => ("ERR", buf),
    };
    let msg = msg.trim_matches(|c| c == '\r' || c == '\n');
    format!("{code} {msg}")
}

/// EVAL's compile error: "ERR Error compiling script (new function): <Lua's message>".
pub fn compile_script(lua_msg: &str) -> String {
    format!("ERR Error compiling script (new function): {lua_msg}")
}

/// FUNCTION LOAD's compile error.
pub fn compile_function(lua_msg: &str) -> String {
    format!("ERR Error compiling function: {lua_msg}")
}

/// FUNCTION LOAD's error when the library's top level fails; `msg` is the error table's text.
pub fn registering(msg: &str) -> String {
    format!("ERR Error registering functions: {msg}")
}

/// FUNCTION LOAD when the library registered nothing.
pub const NO_FUNCTIONS: &str = "ERR No functions registered";

/// A failed run whose error is a table: its `err` text, and where it was raised when the
/// error handler could tell (" script: <name>, on <source>:<line>.").
pub fn run_failed(msg: &str, place: Option<(&str, &str)>, funcname: &str) -> String {
    match place {
        Some((source, line)) => format!("{msg} script: {funcname}, on {source}:{line}."),
        None => msg.to_string(),
    }
}

/// A failed run whose error is not a table (the error handler could not run, e.g. out of
/// memory): Redis's "Error running script" text, the message cut at 100 bytes.
pub fn run_failed_plain(msg: &str, funcname: &str) -> String {
    let mut end = msg.len().min(100);
    while !msg.is_char_boundary(end) {
        end -= 1;
    }
    format!("ERR Error running script {funcname}, {}", &msg[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_tables_keep_or_add_the_code() {
        assert_eq!(
            error_table_text("-WRONGTYPE Operation x"),
            "WRONGTYPE Operation x"
        );
        assert_eq!(error_table_text("-ERR\r\n"), "ERR ERR");
        assert_eq!(error_table_text("-NOCODE"), "ERR NOCODE");
        assert_eq!(error_table_text("plain words"), "ERR plain words");
        assert_eq!(error_table_text("-ERR value\r\n"), "ERR value");
    }

    #[test]
    fn run_errors() {
        assert_eq!(
            run_failed("ERR x", Some(("@user_script", "3")), "abc"),
            "ERR x script: abc, on @user_script:3."
        );
        assert_eq!(run_failed("ERR x", None, "abc"), "ERR x");
        let long = "é".repeat(80);
        let text = run_failed_plain(&long, "f");
        assert!(text.len() <= "ERR Error running script f, ".len() + 100);
        assert_eq!(
            compile_script("m"),
            "ERR Error compiling script (new function): m"
        );
    }
}
