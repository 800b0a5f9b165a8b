//! INFO: sections and fields with Redis's names.
