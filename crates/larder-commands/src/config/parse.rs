//! The parsers of the parameters whose values are more than a number, a word or a flag,
//! and the name lists they check against.

/// `replicaof host port` (or `no one`, or nothing: not a replica), shown as `host port`.
pub(super) fn parse_replicaof(value: &str) -> Result<(i64, String), String> {
    let words: Vec<&str> = value.split_whitespace().collect();
    match words.as_slice() {
        [] => Ok((0, String::new())),
        [no, one] if no.eq_ignore_ascii_case("no") && one.eq_ignore_ascii_case("one") => {
            Ok((0, String::new()))
        }
        [host, port] => {
            let port: u16 = port
                .parse()
                .map_err(|_| "Invalid master port".to_string())?;
            Ok((i64::from(port), format!("{host} {port}")))
        }
        _ => Err("wrong number of arguments".to_string()),
    }
}

/// `tls-auth-clients`' values; the stored number is the index.
pub const TLS_AUTH_CLIENTS: &[&str] = &["no", "yes", "optional"];

/// The TLS versions `tls-protocols` may name.
pub const TLS_PROTOCOLS: &[&str] = &["TLSv1.2", "TLSv1.3"];

/// The TLS 1.3 suites `tls-ciphersuites` may name (OpenSSL and IANA use the same names).
pub const TLS13_SUITES: &[&str] = &[
    "TLS_AES_256_GCM_SHA384",
    "TLS_AES_128_GCM_SHA256",
    "TLS_CHACHA20_POLY1305_SHA256",
];

/// The TLS 1.2 ciphers `tls-ciphers` may name, in OpenSSL's spelling.
pub const TLS12_CIPHERS: &[&str] = &[
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-RSA-CHACHA20-POLY1305",
];

/// A list of names separated by `sep`, each one of `known` (case-insensitive), written back
/// in `known`'s spelling; the number is how many. `what` names the list in the error.
pub(super) fn parse_names(
    value: &str,
    sep: char,
    known: &[&str],
    what: &str,
) -> Result<(i64, String), String> {
    let mut shown: Vec<&str> = Vec::new();
    for word in value.split(sep).filter(|w| !w.is_empty()) {
        let Some(name) = known.iter().find(|k| k.eq_ignore_ascii_case(word)) else {
            return Err(format!(
                "unsupported {what} '{word}' (supported: {})",
                known.join(" ")
            ));
        };
        if !shown.contains(name) {
            shown.push(name);
        }
    }
    Ok((shown.len() as i64, shown.join(&sep.to_string())))
}

/// `tls-protocols`' parser: space-separated versions.
pub(super) fn parse_tls_protocols(value: &str) -> Result<(i64, String), String> {
    parse_names(value, ' ', TLS_PROTOCOLS, "TLS protocol")
}

/// `tls-ciphersuites`' parser: colon-separated TLS 1.3 suites.
pub(super) fn parse_tls_ciphersuites(value: &str) -> Result<(i64, String), String> {
    parse_names(value, ':', TLS13_SUITES, "TLS 1.3 cipher suite")
}

/// `tls-ciphers`' parser: colon-separated TLS 1.2 ciphers.
pub(super) fn parse_tls_ciphers(value: &str) -> Result<(i64, String), String> {
    parse_names(value, ':', TLS12_CIPHERS, "TLS 1.2 cipher")
}

/// `save`'s parser: pairs of seconds and changes, as Redis 7.0 takes them (an empty string
/// for none). The number is the count of rules; the text is normalized.
pub(super) fn parse_save(value: &str) -> Result<(i64, String), String> {
    let rules = super::save_rules(value)?;
    let text = rules
        .iter()
        .map(|(s, c)| format!("{s} {c}"))
        .collect::<Vec<_>>()
        .join(" ");
    Ok((rules.len() as i64, text))
}

/// `memcached-prefix-delimiter`: one ASCII character (its byte is the number).
pub(super) fn parse_delimiter(value: &str) -> Result<(i64, String), String> {
    match value.as_bytes() {
        [b] if b.is_ascii() && !b.is_ascii_whitespace() => Ok((i64::from(*b), value.to_string())),
        _ => Err("argument must be one printable ASCII character".to_string()),
    }
}

/// `client-output-buffer-limit`'s parser for the parameter table.
pub(super) fn parse_output_limits(value: &str) -> Result<(i64, String), String> {
    let limits = crate::mail::parse_output_limits(value)?;
    Ok((0, crate::mail::format_output_limits(&limits)))
}
