//! Byte sizes as users write them: `4096`, `4K`, `16M`, `4G`, `1T` (binary units).
//!
//! A unit is always binary: `G` (or `g`, `GiB`) is 2^30 bytes. `GB` is refused rather than
//! read either way, since it means 10^9 bytes to some readers and 2^30 to others.

/// Why a size string was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// No leading digits, or a suffix that is not `K`, `M`, `G`, `T` (optionally `iB`) or `B`.
    #[error(
        "expected a number with optional K, M, G or T suffix (binary units), e.g. 4K, 16M, 4G"
    )]
    Malformed,
    /// A unit followed by a bare `B`, such as `GB`; holds the unit letter (upper case).
    #[error("{0}B is ambiguous (decimal or binary?): write {0} or {0}iB, binary units (1G = 2^30 bytes)")]
    Ambiguous(char),
    /// The number, or the number times its unit, does not fit in a `u64` of bytes.
    #[error("too large: does not fit in 64 bits")]
    Overflow,
}

/// Binary unit suffixes, largest first (the order [`format_size`] tries them in).
const UNITS: [(char, u32); 4] = [('T', 40), ('G', 30), ('M', 20), ('K', 10)];

/// Parses a byte count: decimal digits, then optionally a unit `K`, `M`, `G` or `T`
/// (any case, always powers of 1024, optionally followed by `iB`), or a bare `B`.
/// So `4K`, `4k` and `4KiB` are all 4096; `4KB` is refused as ambiguous.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    if digits.is_empty() {
        return Err(SizeError::Malformed);
    }
    let shift = suffix_shift(suffix)?;
    // Only digits remain, so the one way `parse` can fail is overflow.
    let number: u64 = digits.parse().map_err(|_| SizeError::Overflow)?;
    number.checked_mul(1 << shift).ok_or(SizeError::Overflow)
}

/// The shift a unit suffix stands for.
fn suffix_shift(suffix: &str) -> Result<u32, SizeError> {
    if suffix.is_empty() || suffix.eq_ignore_ascii_case("b") {
        return Ok(0);
    }
    let mut chars = suffix.chars();
    let unit = chars
        .next()
        .ok_or(SizeError::Malformed)?
        .to_ascii_uppercase();
    let (_, shift) = UNITS
        .iter()
        .find(|(u, _)| *u == unit)
        .ok_or(SizeError::Malformed)?;
    match chars.as_str() {
        "" => Ok(*shift),
        rest if rest.eq_ignore_ascii_case("ib") => Ok(*shift),
        rest if rest.eq_ignore_ascii_case("b") => Err(SizeError::Ambiguous(unit)),
        _ => Err(SizeError::Malformed),
    }
}

/// Serde helper: a size field written either as a number of bytes or as a size string.
pub fn deserialize_size<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Bytes(u64),
        Text(String),
    }
    match <Raw as serde::Deserialize>::deserialize(d)? {
        Raw::Bytes(b) => Ok(b),
        Raw::Text(t) => {
            parse_size(&t).map_err(|e| serde::de::Error::custom(format!("size {t:?}: {e}")))
        }
    }
}

/// Serde helper: a size field written as [`format_size`] writes it (`"64G"`), which
/// [`deserialize_size`] reads back.
pub fn serialize_size<S: serde::Serializer>(bytes: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_size(*bytes))
}

/// Formats a byte count in the largest binary unit that divides it exactly (`4G`, `64M`,
/// `1536K`, `1536`), so that [`parse_size`] reads back the same number.
pub fn format_size(bytes: u64) -> String {
    if bytes != 0 {
        for (unit, shift) in UNITS {
            if bytes & ((1 << shift) - 1) == 0 {
                return format!("{}{unit}", bytes >> shift);
            }
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_plain_and_suffixed_sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("1536"), Ok(1536));
        for k in ["4K", "4k", "4KiB", "4kib", "4kIB"] {
            assert_eq!(parse_size(k), Ok(4096), "{k}");
        }
        assert_eq!(parse_size("4GiB"), Ok(4 << 30));
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        assert_eq!(parse_size("512B"), Ok(512));
        assert_eq!(parse_size("0"), Ok(0));
    }

    #[test]
    fn rejects_malformed_sizes() {
        for bad in [
            "", "4Q", "K", "4 K", " 4K", "4K ", "-4K", "+4K", "1.5G", "4KK", "4Ki", "4iB", "0x10",
        ] {
            assert_eq!(parse_size(bad), Err(SizeError::Malformed), "{bad:?}");
        }
    }

    #[test]
    fn refuses_units_that_could_be_decimal() {
        for (text, unit) in [
            ("4GB", 'G'),
            ("4gb", 'G'),
            ("16MB", 'M'),
            ("4kB", 'K'),
            ("1TB", 'T'),
        ] {
            let e = parse_size(text).expect_err(text);
            assert_eq!(e, SizeError::Ambiguous(unit), "{text}");
        }
        assert_eq!(
            parse_size("4GB").unwrap_err().to_string(),
            "GB is ambiguous (decimal or binary?): write G or GiB, binary units (1G = 2^30 bytes)"
        );
    }

    #[test]
    fn rejects_overflow() {
        assert_eq!(parse_size("99999999999T"), Err(SizeError::Overflow));
        assert_eq!(parse_size("16777216T"), Err(SizeError::Overflow));
        assert_eq!(
            parse_size("99999999999999999999999"),
            Err(SizeError::Overflow)
        );
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn formats_in_the_shortest_exact_unit() {
        assert_eq!(format_size(4 << 30), "4G");
        assert_eq!(format_size(64 << 20), "64M");
        assert_eq!(format_size(4096), "4K");
        assert_eq!(format_size(1536), "1536");
        assert_eq!(format_size(1536 << 10), "1536K");
        assert_eq!(format_size(1 << 46), "64T");
        assert_eq!(format_size(0), "0");
    }

    #[test]
    fn error_messages_name_the_expected_form() {
        let msg = SizeError::Malformed.to_string();
        assert!(
            msg.contains("K, M, G or T") && msg.contains("4K, 16M, 4G"),
            "{msg}"
        );
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(bytes in any::<u64>()) {
            prop_assert_eq!(parse_size(&format_size(bytes)), Ok(bytes));
        }

        #[test]
        fn parse_never_panics(text in "\\PC*") {
            let _ = parse_size(&text);
        }
    }
}
