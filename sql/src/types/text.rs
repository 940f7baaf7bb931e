//! `character(n)`, `character varying(n)` and `text`: lengths counted in characters
//! (UTF-8 code points), not bytes, as PostgreSQL counts them.
//!
//! `character(n)` values are stored and printed padded with spaces to `n`, and compare
//! ignoring trailing spaces (PostgreSQL's `bpchar`). Storing a value longer than the
//! limit is an error unless everything past the limit is spaces, which are then cut
//! (PostgreSQL's assignment rule); an explicit cast cuts silently (the SQL standard's
//! rule, also PostgreSQL's). Strings compare by bytes, which is code-point order
//! (PostgreSQL's `C` collation); other collations are not supported.

use std::cmp::Ordering;

use super::error::{Error, Result};

/// How a value is being fitted to a declared length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LengthCheck {
    /// Storing into a column: too long is an error unless the excess is spaces.
    Assignment,
    /// `CAST(x AS varchar(n))` / `x::char(n)`: too long is cut silently.
    Explicit,
}

/// The byte offset after the first `n` characters, or `None` when `s` has at most `n`.
fn byte_offset_of_char(s: &str, n: usize) -> Option<usize> {
    s.char_indices().nth(n).map(|(i, _)| i)
}

/// Cuts `s` to `limit` characters according to `check`; `type_name` names the type in
/// the error.
fn cut(s: &str, limit: u32, check: LengthCheck, type_name: impl Fn() -> String) -> Result<&str> {
    match byte_offset_of_char(s, limit as usize) {
        None => Ok(s),
        Some(end) => {
            if check == LengthCheck::Assignment && !s[end..].bytes().all(|b| b == b' ') {
                return Err(Error::ValueTooLong {
                    type_name: type_name(),
                });
            }
            Ok(&s[..end])
        }
    }
}

/// Fits a string to `character varying(limit)` (`None`: no limit).
pub fn fit_varchar(s: &str, limit: Option<u32>, check: LengthCheck) -> Result<String> {
    match limit {
        None => Ok(s.to_string()),
        Some(n) => cut(s, n, check, || format!("character varying({n})")).map(str::to_string),
    }
}

/// Fits a string to `character(limit)`: cut as [`fit_varchar`], then padded with
/// spaces to `limit` characters.
pub fn fit_char(s: &str, limit: u32, check: LengthCheck) -> Result<String> {
    let cut = cut(s, limit, check, || format!("character({limit})"))?;
    let len = cut.chars().count();
    let mut out = String::with_capacity(cut.len() + (limit as usize).saturating_sub(len));
    out.push_str(cut);
    out.extend(std::iter::repeat_n(
        ' ',
        (limit as usize).saturating_sub(len),
    ));
    Ok(out)
}

/// The significant part of a `character(n)` value: without trailing spaces, which is
/// also what converting it to `text` or `varchar` gives in PostgreSQL.
pub fn bpchar_trim(s: &str) -> &str {
    s.trim_end_matches(' ')
}

/// Compares two `character(n)` values ignoring trailing spaces (`'ab ' = 'ab'`).
pub fn bpchar_cmp(a: &str, b: &str) -> Ordering {
    bpchar_trim(a).cmp(bpchar_trim(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varchar_limits() {
        let a = LengthCheck::Assignment;
        assert_eq!(fit_varchar("hello", Some(5), a).unwrap(), "hello");
        assert_eq!(
            fit_varchar("hello!", Some(5), a).unwrap_err().to_string(),
            "value too long for type character varying(5)"
        );
        assert_eq!(fit_varchar("hello   ", Some(5), a).unwrap(), "hello");
        assert_eq!(
            fit_varchar("hello!", Some(5), LengthCheck::Explicit).unwrap(),
            "hello"
        );
        // Characters, not bytes.
        assert_eq!(fit_varchar("ééééé", Some(5), a).unwrap(), "ééééé");
        assert!(fit_varchar("éééééé", Some(5), a).is_err());
        assert_eq!(fit_varchar("anything", None, a).unwrap(), "anything");
    }

    #[test]
    fn char_pads_and_compares_without_trailing_spaces() {
        let a = LengthCheck::Assignment;
        assert_eq!(fit_char("ab", 4, a).unwrap(), "ab  ");
        assert_eq!(fit_char("é", 3, a).unwrap(), "é  ");
        assert_eq!(fit_char("abc  ", 3, a).unwrap(), "abc");
        assert_eq!(
            fit_char("abcd", 3, a).unwrap_err().to_string(),
            "value too long for type character(3)"
        );
        assert_eq!(fit_char("abcd", 3, LengthCheck::Explicit).unwrap(), "abc");
        // select 'ab '::char(3) = 'ab'::char(3) → true
        assert_eq!(
            bpchar_cmp(
                &fit_char("ab ", 3, a).unwrap(),
                &fit_char("ab", 3, a).unwrap()
            ),
            Ordering::Equal
        );
        assert_eq!(bpchar_cmp("ab", "ab\t"), Ordering::Less);
        assert_eq!(bpchar_trim("a b  "), "a b");
    }
}
