//! JSON text: the one string escaper BeeDB's JSON outputs share (EXPLAIN (FORMAT
//! JSON) and the shell's `.mode json`, which reaches it as `beedb::types::json`).

use std::fmt::Write;

/// Appends `s` to `out` as a JSON string literal: the quote, the backslash and the
/// control characters escaped (`\n`, `\r`, `\t`, `\b`, `\f`, the others as `\u00XX`),
/// and U+2028 / U+2029 too, so the text is also valid JavaScript.
pub fn write_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `s` as a JSON string literal (see [`write_json_string`]).
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_json_string(s, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_quotes_backslashes_and_control_characters() {
        assert_eq!(json_string("a\"b\\c\nd\te\u{1}é😀"), r#""a\"b\\c\nd\te\u0001é😀""#);
        assert_eq!(json_string("\u{8}\u{c}\r\u{1f}\u{2028}\u{2029}"), r#""\b\f\r\u001f\u2028\u2029""#);
        assert_eq!(json_string(""), r#""""#);
    }
}
