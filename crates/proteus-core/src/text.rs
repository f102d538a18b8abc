//! Error messages written as parts (text and decimal numbers) with `write_str` only.
//!
//! A `write!` or `format!` with arguments links `core::fmt::write`, padding and the integer
//! formatters: about 5 KB of the web build's .wasm for its error messages alone
//! (docs/benchmarks.md, "Panics and core::fmt", session 14). The messages are the same.

use core::fmt;

/// A part of a message.
#[derive(Debug, Clone, Copy)]
pub enum Part<'a> {
    /// Text, as it is.
    Text(&'a str),
    /// An integer, in decimal.
    Number(u64),
    /// A signed integer, in decimal.
    Signed(i64),
}

/// Writes `parts` to `out` (a `Formatter` or a `String`). Generic rather than `dyn`: a
/// `dyn fmt::Write` vtable holds `write_fmt`, which links core::fmt's machinery.
pub fn write_parts<W: fmt::Write>(out: &mut W, parts: &[Part<'_>]) -> fmt::Result {
    for part in parts {
        match *part {
            Part::Text(text) => out.write_str(text)?,
            Part::Number(n) => out.write_str(decimal(n, &mut [0; 20]))?,
            Part::Signed(n) => {
                if n < 0 {
                    out.write_str("-")?;
                }
                out.write_str(decimal(n.unsigned_abs(), &mut [0; 20]))?;
            }
        }
    }
    Ok(())
}

/// `parts` as one string.
pub fn join(parts: &[Part<'_>]) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = write_parts(&mut out, parts);
    out
}

/// `n` in decimal, in the end of `buf` (20 digits hold every u64).
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &str {
    let mut start = buf.len();
    for (i, digit) in buf.iter_mut().enumerate().rev() {
        *digit = b'0' + (n % 10) as u8;
        n /= 10;
        start = i;
        if n == 0 {
            break;
        }
    }
    // ASCII digits, so never the empty fallback.
    std::str::from_utf8(buf.get(start..).unwrap_or_default()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_format_writes_them() {
        for n in [
            0,
            1,
            9,
            10,
            99,
            100,
            65_535,
            1 << 32,
            u64::MAX - 1,
            u64::MAX,
        ] {
            assert_eq!(join(&[Part::Number(n)]), format!("{n}"));
        }
        for n in [0, 7, -7, 10, -10, i64::MAX, i64::MIN, i64::MIN + 1] {
            assert_eq!(join(&[Part::Signed(n)]), format!("{n}"));
        }
    }

    #[test]
    fn parts_are_joined_in_order() {
        let parts = [
            Part::Text("gap "),
            Part::Number(42),
            Part::Text(""),
            Part::Text(", limit "),
            Part::Number(0),
        ];
        assert_eq!(join(&parts), "gap 42, limit 0");
    }
}
