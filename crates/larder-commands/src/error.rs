//! Every client-visible error text, byte for byte as Redis 7 sends it (without the leading '-').

/// A command's failure: the error reply to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// A fixed message.
    Static(&'static str),
    /// A message built at run time.
    Owned(String),
}

impl Error {
    /// The reply text, e.g. "ERR syntax error".
    pub fn message(&self) -> &str {
        match self {
            Error::Static(s) => s,
            Error::Owned(s) => s,
        }
    }

    /// The error code (first word), used by INFO errorstats.
    pub fn code(&self) -> &str {
        let m = self.message();
        m.split(' ').next().unwrap_or(m)
    }
}

impl From<&'static str> for Error {
    fn from(s: &'static str) -> Error {
        Error::Static(s)
    }
}

impl From<larder_engine::EngineError> for Error {
    fn from(e: larder_engine::EngineError) -> Error {
        use larder_engine::EngineError as E;
        Error::Static(match e {
            E::WrongType => WRONGTYPE,
            E::NotInteger => NOT_INTEGER,
            E::NotFloat => NOT_FLOAT,
            E::Overflow => OVERFLOW,
            E::NanOrInfinity => NAN_OR_INFINITY,
            E::TooLarge => STRING_TOO_LONG,
            _ => "ERR internal error",
        })
    }
}

pub type Result<T> = std::result::Result<T, Error>;

pub const SYNTAX: &str = "ERR syntax error";
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
pub const NAN_OR_INFINITY: &str = "ERR increment would produce NaN or Infinity";
pub const STRING_TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
pub const NO_SUCH_KEY: &str = "ERR no such key";
pub const DB_INDEX: &str = "ERR DB index is out of range";
pub const SAME_OBJECT: &str = "ERR source and destination objects are the same";
pub const NOAUTH: &str = "NOAUTH Authentication required.";
pub const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
pub const AUTH_NOT_CONFIGURED: &str = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?";
pub const NOPROTO: &str = "NOPROTO unsupported protocol version";
pub const MAX_CLIENTS: &str = "ERR max number of clients reached";
pub const OFFSET_OUT_OF_RANGE: &str = "ERR offset is out of range";
pub const TIMEOUT_NOT_INTEGER: &str = "ERR timeout is not an integer or out of range";
pub const NEGATIVE_COUNT: &str = "ERR value is out of range, must be positive";
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
pub const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";

/// `ERR wrong number of arguments for 'get' command` (name as the user typed it, lower-cased;
/// subcommands as `client|kill`).
pub fn wrong_arity(name: &str) -> Error {
    Error::Owned(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// Redis 7's unknown-command text: arguments are quoted and appended while the list is
/// shorter than 128 bytes, each cut to what is left of those 128.
pub fn unknown_command(argv: &[&[u8]]) -> Error {
    let mut args = String::new();
    for a in argv.iter().skip(1) {
        if args.len() >= 128 {
            break;
        }
        let room = 128 - args.len();
        let text = sanitize(&a[..a.len().min(room)]);
        args.push('\'');
        args.push_str(&text);
        args.push_str("' ");
    }
    Error::Owned(format!(
        "ERR unknown command '{}', with args beginning with: {args}",
        clip(argv[0])
    ))
}

/// `ERR unknown subcommand 'foo'. Try CLIENT HELP.`
pub fn unknown_subcommand(sub: &[u8], container: &str) -> Error {
    Error::Owned(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        clip(sub),
        container.to_ascii_uppercase()
    ))
}

/// `ERR invalid expire time in 'set' command`
pub fn invalid_expire(name: &str) -> Error {
    Error::Owned(format!("ERR invalid expire time in '{name}' command"))
}

/// Up to 128 bytes, lossy UTF-8, newlines replaced (Redis sanitises error text).
fn clip(b: &[u8]) -> String {
    sanitize(&b[..b.len().min(128)])
}

fn sanitize(b: &[u8]) -> String {
    String::from_utf8_lossy(b).replace(['\r', '\n'], " ")
}
