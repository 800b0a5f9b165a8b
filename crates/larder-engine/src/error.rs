use std::fmt;

/// Why a shard operation could not be done. Client-visible text lives in `larder-commands`.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineError {
    /// The key holds a value of another type.
    WrongType,
    /// The value is not an integer, or out of range.
    NotInteger,
    /// The value is not a valid float.
    NotFloat,
    /// Incrementing would overflow.
    Overflow,
    /// The result would be NaN or infinite.
    NanOrInfinity,
    /// The string would exceed the maximum size.
    TooLarge,
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EngineError::WrongType => "wrong type",
            EngineError::NotInteger => "not an integer",
            EngineError::NotFloat => "not a float",
            EngineError::Overflow => "overflow",
            EngineError::NanOrInfinity => "nan or infinity",
            EngineError::TooLarge => "too large",
        })
    }
}

impl std::error::Error for EngineError {}
