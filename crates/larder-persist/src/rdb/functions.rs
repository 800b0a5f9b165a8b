//! Placeholder until FUNCTION DUMP payloads land.
pub fn dump_payload(_codes: &[&str]) -> Vec<u8> {
    Vec::new()
}
pub fn parse_dump_payload(_b: &[u8]) -> Result<Vec<String>, String> {
    Err("DUMP payload version or checksum are wrong".into())
}
