//! Parsing and printing byte sizes (`4KiB`, `1M`, `65536`) for knobs and command lines.

use crate::{Error, ErrorKind, Result};

/// Parses a byte size: a number with an optional suffix `K`, `KiB`, `M`, `MiB`, `G`, `GiB`
/// (all binary multiples; `k`/`m`/`g` accepted too) or `B`.
pub fn parse_bytes(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    if digits.is_empty() {
        return Err(Error::new(
            ErrorKind::Config,
            format!("byte size {text:?}: expected a number with an optional K/M/G suffix"),
        ));
    }
    let value: u64 = digits.parse().map_err(|_| {
        Error::new(
            ErrorKind::Config,
            format!("byte size {text:?}: number out of range"),
        )
    })?;
    let mult: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => {
            return Err(Error::new(
                ErrorKind::Config,
                format!("byte size {text:?}: unknown suffix {other:?} (use K, M or G)"),
            ))
        }
    };
    value.checked_mul(mult).ok_or_else(|| {
        Error::new(
            ErrorKind::Config,
            format!("byte size {text:?}: out of range"),
        )
    })
}

/// Formats a byte count the short way OSU tables do: `8`, `64K`, `1M`.
pub fn format_bytes(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{}G", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{}M", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{}K", bytes >> 10)
    } else {
        bytes.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_suffixes() {
        assert_eq!(parse_bytes("0").unwrap(), 0);
        assert_eq!(parse_bytes("8").unwrap(), 8);
        assert_eq!(parse_bytes("4KiB").unwrap(), 4096);
        assert_eq!(parse_bytes("1M").unwrap(), 1 << 20);
        assert_eq!(parse_bytes("2g").unwrap(), 2 << 30);
        assert!(parse_bytes("").is_err());
        assert!(parse_bytes("12X").is_err());
        assert!(parse_bytes("K").is_err());
        assert!(parse_bytes("99999999999999999999").is_err());
    }

    #[test]
    fn formats_round_trip() {
        for b in [0u64, 1, 7, 1024, 65536, 1 << 20, 3 << 30, 1000] {
            assert_eq!(parse_bytes(&format_bytes(b)).unwrap(), b);
        }
    }
}
