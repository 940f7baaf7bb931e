//! The in-memory preparation SQLite's corpus files need before the `sqllogictest`
//! crate can run them (see `/work/shared/sqllogictest/README.md`). The files on disk
//! are never changed, and the prepared text keeps every line where it was, so line
//! numbers in reports and in the skip list are the original file's.
//!
//! - `skipif X # comment` / `onlyif X # comment`: the comment is cut (the crate
//!   rejects it).
//! - `onlyif X` followed by `halt` (SQLite's way to stop a file for engine X): the
//!   crate would halt unconditionally, so the pair is replaced by comment lines, or by
//!   a bare `halt` when X is one of the runner's labels. `skipif X` + `halt` likewise.
//!
//! `hash-threshold 8` and `control resultmode valuewise` are not written into the
//! text: the runner applies them ([`CORPUS_PRELUDE`]) before the file's first record.

/// Records run before every corpus file.
pub const CORPUS_PRELUDE: &str = "hash-threshold 8\ncontrol resultmode valuewise\n";

/// The prepared text of a corpus file; it has exactly as many lines as `text`.
pub fn prepare(text: &str, labels: &[String]) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::with_capacity(text.len() + 64);
    let mut i = 0;
    while i < lines.len() {
        let line = strip_condition_comment(lines[i]);
        if let Some((skip_if, label)) = condition(line)
            && lines.get(i + 1).is_some_and(|next| next.trim() == "halt")
        {
            let label_seen = labels.iter().any(|l| l == label);
            let halts = if skip_if { !label_seen } else { label_seen };
            out.push_str("# beedb-slt: condition for the next line\n");
            out.push_str(if halts {
                "halt\n"
            } else {
                "# beedb-slt: halt for another engine\n"
            });
            i += 2;
            continue;
        }
        out.push_str(line);
        out.push('\n');
        i += 1;
    }
    out
}

/// `skipif X # why` → `skipif X`; other lines unchanged.
fn strip_condition_comment(line: &str) -> &str {
    if line.starts_with("skipif") || line.starts_with("onlyif") {
        match line.find('#') {
            Some(hash) => line[..hash].trim_end(),
            None => line.trim_end(),
        }
    } else {
        line
    }
}

/// `(is skipif, label)` for a condition line.
fn condition(line: &str) -> Option<(bool, &str)> {
    let mut words = line.split_whitespace();
    let skip_if = match words.next()? {
        "skipif" => true,
        "onlyif" => false,
        _ => return None,
    };
    let label = words.next()?;
    words.next().is_none().then_some((skip_if, label))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepare_keeps_line_numbers_and_drops_foreign_halts() {
        let text = "onlyif mssql\nhalt\n\nskipif mysql # not compatible\nquery I nosort\nSELECT 1\n----\n1\n\nonlyif postgresql\nhalt\n";
        let labels = vec!["postgresql".to_string()];
        let out = prepare(text, &labels);
        assert_eq!(out.lines().count(), text.lines().count());
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with('#') && lines[1].starts_with('#'));
        assert_eq!(lines[3], "skipif mysql");
        assert_eq!(lines[4], "query I nosort");
        assert!(lines[9].starts_with('#'));
        assert_eq!(lines[10], "halt");
    }
}
