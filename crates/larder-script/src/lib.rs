//! Lua scripting as Redis 7.0 has it: the sandboxed interpreter, the conversions between Lua
//! values and RESP replies, the libraries scripts may use (cjson, cmsgpack, bit, struct),
//! and running EVAL scripts and FUNCTION libraries against a [`vm::Host`].
//!
//! It is not: the command handlers (EVAL, SCRIPT, FUNCTION, FCALL live in
//! `larder-commands`, which implements [`vm::Host`] over the executor), nor the keyspace.
//! A script reaches data only through the host's `call`.
// `unsafe` only in `sandbox::{call, enter, reply}` (the host's cell, and the Lua C API where
// a run starts, redis.call runs and its reply is decoded; ARCHITECTURE.md, "Cross-cutting
// concerns").
#![deny(unsafe_code)]

pub mod convert;
pub mod errors;
pub mod libs;
pub mod sandbox;
pub mod shebang;
pub mod vm;
