//! Parsing and printing byte sizes (`4KiB`, `1M`, `1.5G`, `65536`) for knobs and command lines.

use crate::{Error, ErrorKind, Result};

/// Parses a byte size: a number, possibly with a decimal fraction (`1.5G`, as OpenSHMEM's
/// `SHMEM_SYMMETRIC_SIZE` allows), with an optional suffix `K`, `KiB`, `M`, `MiB`, `G`, `GiB`,
/// `T`, `TiB` (all binary multiples; lower case accepted too) or `B`. A fraction is rounded
/// up to whole bytes (OpenSHMEM: at least the integer ceiling of number times multiple).
pub fn parse_bytes(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (number, suffix) = t.split_at(split);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return Err(Error::new(
            ErrorKind::Config,
            format!("byte size {text:?}: expected a number with an optional K/M/G/T suffix"),
        ));
    }
    let out_of_range = || {
        Error::new(
            ErrorKind::Config,
            format!("byte size {text:?}: out of range"),
        )
    };
    let mult: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        other => {
            return Err(Error::new(
                ErrorKind::Config,
                format!("byte size {text:?}: unknown suffix {other:?} (use K, M, G or T)"),
            ))
        }
    };
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| out_of_range())?
    };
    // The fraction in exact integer arithmetic: ceil(digits * mult / 10^len), at most 19
    // digits (further ones could only round up what is already rounded up).
    let fraction_bytes = if fraction.is_empty() {
        0
    } else {
        let digits = &fraction[..fraction.len().min(19)];
        let value: u128 = digits.parse().map_err(|_| out_of_range())?;
        (value * u128::from(mult)).div_ceil(10u128.pow(digits.len() as u32)) as u64
    };
    whole
        .checked_mul(mult)
        .and_then(|b| b.checked_add(fraction_bytes))
        .ok_or_else(out_of_range)
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
        assert_eq!(parse_bytes("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_bytes("0.5k").unwrap(), 512);
        assert_eq!(parse_bytes("2T").unwrap(), 2 << 40);
        assert_eq!(parse_bytes("1.0000001").unwrap(), 2);
        assert_eq!(parse_bytes("3.1M").unwrap(), 3250586);
        assert_eq!(parse_bytes(".5m").unwrap(), 1 << 19);
        assert!(parse_bytes(".").is_err());
        assert!(parse_bytes("1.2.3M").is_err());
    }

    #[test]
    fn formats_round_trip() {
        for b in [0u64, 1, 7, 1024, 65536, 1 << 20, 3 << 30, 1000] {
            assert_eq!(parse_bytes(&format_bytes(b)).unwrap(), b);
        }
    }
}
