//! Error reports in psql's layout: the message, then (when the error has a position)
//! the statement line holding it and a caret under the offending character.
//!
//! ```text
//! ERROR:  syntax error at or near "FRM"
//! LINE 1: SELECT * FRM t
//!                  ^
//! ```

use beedb::Error;

use super::format::display_width;

/// Lines longer than this many columns are cut around the caret, as psql does.
const DISPLAY_SIZE: usize = 60;
/// Columns kept to the right of the caret when a long line is cut on the left.
const MIN_RIGHT_CUT: usize = 10;

/// The full report for `err`, raised by the statement `sql`; ends with a newline.
/// In libpq's order: the message, the line and caret, then DETAIL and HINT.
pub fn format_error(err: &Error, sql: &str) -> String {
    let mut out = format!("ERROR:  {}\n", err.message);
    if let Some(pos) = err.position {
        out.push_str(&caret_lines(sql, pos));
    }
    if let Some(detail) = &err.detail {
        out.push_str(&format!("DETAIL:  {detail}\n"));
    }
    if let Some(hint) = &err.hint {
        out.push_str(&format!("HINT:  {hint}\n"));
    }
    out
}

/// `LINE n: <line>` and the caret line for byte offset `pos` of `sql`.
pub fn caret_lines(sql: &str, pos: usize) -> String {
    let mut pos = pos.min(sql.len());
    while !sql.is_char_boundary(pos) {
        pos -= 1;
    }
    let line_start = sql[..pos].rfind('\n').map_or(0, |i| i + 1);
    let line_no = sql[..line_start].matches('\n').count() + 1;
    let line_end = sql[pos..].find('\n').map_or(sql.len(), |i| pos + i);
    let line = sql[line_start..line_end].trim_end_matches('\r');
    let col = pos - line_start;
    // What is shown of the line before the caret, and from the caret on; tabs become
    // spaces and control characters are hidden so the caret lines up.
    let before = visible(&line[..col.min(line.len())]);
    let after = visible(&line[col.min(line.len())..]);
    let mut caret_col = display_width(&before);
    let mut shown = format!("{before}{after}");
    // Cut a long line around the caret, marking each cut with "...".
    if display_width(&shown) > DISPLAY_SIZE {
        if caret_col + MIN_RIGHT_CUT > DISPLAY_SIZE {
            let drop = caret_col + MIN_RIGHT_CUT + 3 - DISPLAY_SIZE;
            let (kept, dropped_width) = drop_columns(&shown, drop);
            shown = format!("...{kept}");
            caret_col = caret_col - dropped_width + 3;
        }
        if display_width(&shown) > DISPLAY_SIZE {
            shown = format!("{}...", take_columns(&shown, DISPLAY_SIZE - 3));
        }
    }
    let prefix = format!("LINE {line_no}: ");
    format!(
        "{prefix}{shown}\n{}^\n",
        " ".repeat(prefix.len() + caret_col)
    )
}

fn visible(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Drops at least `width` columns from the front of `s`; returns the rest and the
/// width dropped.
fn drop_columns(s: &str, width: usize) -> (&str, usize) {
    let mut dropped = 0;
    for (i, c) in s.char_indices() {
        if dropped >= width {
            return (&s[i..], dropped);
        }
        dropped += display_width(c.encode_utf8(&mut [0; 4]));
    }
    ("", dropped)
}

/// The longest prefix of `s` at most `width` columns wide.
fn take_columns(s: &str, width: usize) -> &str {
    let mut used = 0;
    for (i, c) in s.char_indices() {
        let w = display_width(c.encode_utf8(&mut [0; 4]));
        if used + w > width {
            return &s[..i];
        }
        used += w;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use beedb::ErrorKind;

    fn err(message: &str, position: Option<usize>) -> Error {
        Error {
            kind: ErrorKind::Syntax,
            sqlstate: "42601",
            message: message.to_string(),
            position,
            detail: None,
            hint: None,
        }
    }

    #[test]
    fn detail_and_hint_follow_the_caret() {
        let e = err("duplicate key value violates unique constraint \"t_pkey\"", Some(7))
            .with_detail("Key (a)=(1) already exists.")
            .with_hint("Pick another key.");
        assert_eq!(
            format_error(&e, "INSERT 1"),
            "ERROR:  duplicate key value violates unique constraint \"t_pkey\"\n\
             LINE 1: INSERT 1\n\
             \x20              ^\n\
             DETAIL:  Key (a)=(1) already exists.\n\
             HINT:  Pick another key.\n"
        );
    }

    #[test]
    fn caret_under_the_token() {
        let sql = "SELECT * FRM t";
        let out = format_error(&err("syntax error at or near \"FRM\"", Some(9)), sql);
        assert_eq!(
            out,
            "ERROR:  syntax error at or near \"FRM\"\nLINE 1: SELECT * FRM t\n                 ^\n"
        );
    }

    #[test]
    fn no_position_no_caret() {
        let out = format_error(
            &err("relation \"t\" does not exist", None),
            "SELECT * FROM t",
        );
        assert_eq!(out, "ERROR:  relation \"t\" does not exist\n");
    }

    #[test]
    fn multi_line_statement_shows_the_right_line() {
        let sql = "SELECT a,\n       b\nFROM t\nWHERE x = = 1;";
        let pos = sql.find("= 1").unwrap();
        assert_eq!(
            caret_lines(sql, pos),
            "LINE 4: WHERE x = = 1;\n                  ^\n"
        );
        // The first character of a line.
        let pos = sql.find("FROM").unwrap();
        assert_eq!(caret_lines(sql, pos), "LINE 3: FROM t\n        ^\n");
    }

    #[test]
    fn caret_counts_characters_not_bytes() {
        let sql = "SELECT 'héllo' FRM t";
        let pos = sql.find("FRM").unwrap();
        assert_eq!(pos, 16);
        assert_eq!(
            caret_lines(sql, pos),
            "LINE 1: SELECT 'héllo' FRM t\n                       ^\n"
        );
        // Wide characters take two columns on a terminal.
        let sql = "SELECT '日本' FRM t";
        let pos = sql.find("FRM").unwrap();
        assert_eq!(
            caret_lines(sql, pos),
            "LINE 1: SELECT '日本' FRM t\n                      ^\n"
        );
    }

    #[test]
    fn caret_at_end_of_input() {
        let sql = "SELECT 1 +";
        assert_eq!(
            caret_lines(sql, sql.len()),
            "LINE 1: SELECT 1 +\n                  ^\n"
        );
        // Past the end, or in the middle of a character: clamped.
        assert_eq!(caret_lines(sql, 99), caret_lines(sql, sql.len()));
        let sql = "SELECT é";
        assert_eq!(caret_lines(sql, 8), caret_lines(sql, 7));
    }

    #[test]
    fn tabs_do_not_shift_the_caret() {
        let sql = "SELECT\t*\tFRM t";
        let pos = sql.find("FRM").unwrap();
        assert_eq!(
            caret_lines(sql, pos),
            "LINE 1: SELECT * FRM t\n                 ^\n"
        );
    }

    #[test]
    fn long_lines_are_cut_around_the_caret() {
        let sql = format!(
            "SELECT {} FRM t WHERE {}",
            "a, ".repeat(30),
            "b AND ".repeat(20)
        );
        let pos = sql.find("FRM").unwrap();
        let out = caret_lines(&sql, pos);
        let lines: Vec<&str> = out.lines().collect();
        let shown = lines[0].strip_prefix("LINE 1: ").unwrap();
        assert!(shown.starts_with("..."), "{shown}");
        assert!(shown.ends_with("..."), "{shown}");
        assert!(display_width(shown) <= DISPLAY_SIZE, "{shown}");
        let caret = lines[1].find('^').unwrap();
        assert_eq!(&lines[0][caret..caret + 3], "FRM", "\n{out}");
    }
}
