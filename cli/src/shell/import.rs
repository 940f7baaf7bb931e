//! `.import [--csv] [--skip N] FILE TABLE`: loads a CSV file into a table, with
//! sqlite3's rules for the first row.
//!
//! If TABLE does not exist, the first row (after the skipped ones) names its
//! columns, all of type TEXT; if it exists, every row is data unless skipped. The
//! rows are loaded by the engine's `COPY TABLE FROM 'FILE' (FORMAT csv)`, not by
//! INSERTs from the shell: COPY is the bulk path (no statement per row), its CSV
//! rules are PostgreSQL's, the ones `.mode csv` writes by (an unquoted empty field
//! is NULL, `""` an empty string, so an export imports back unchanged), and its
//! errors name the line. A new table and its rows are created in one transaction,
//! so a failed import leaves nothing behind (inside a `BEGIN` block the block's
//! own rules apply: a failure aborts it).

use std::io::{BufRead, BufReader, Write};

use super::{Shell, sql_literal, unquote};

pub const USAGE: &str = ".import [--csv] [--skip N] FILE TABLE";

impl Shell {
    /// `.import`, given everything after the command name.
    pub(super) fn dot_import(&mut self, rest: &str) -> bool {
        let words = match split_words(rest) {
            Some(w) => w,
            None => return self.usage(USAGE),
        };
        let mut skip = 0usize;
        let mut positional = Vec::new();
        let mut i = 0;
        while i < words.len() {
            match words[i].as_str() {
                "--csv" | "-csv" => {}
                "--skip" | "-skip" => {
                    i += 1;
                    match words.get(i).and_then(|n| n.parse().ok()) {
                        Some(n) => skip = n,
                        None => return self.usage(USAGE),
                    }
                }
                w if w.starts_with('-') && w.len() > 1 => {
                    return self.usage(&format!("unknown option \"{w}\"; {USAGE}"));
                }
                w => positional.push(w.to_string()),
            }
            i += 1;
        }
        let [file, table] = positional.as_slice() else {
            return self.usage(USAGE);
        };
        let file = &unquote(file).to_string();
        // An unquoted name folds to lower case, as in SQL.
        let name = match table.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
            Some(quoted) => quoted.replace("\"\"", "\""),
            None => table.to_lowercase(),
        };
        let Some(exists) = self.table_exists(&name) else {
            return false;
        };
        let create = if exists {
            None
        } else {
            match header_columns(file, skip) {
                Ok(columns) => Some(create_table_sql(&name, &columns)),
                Err(message) => {
                    self.error(&message);
                    return false;
                }
            }
        };
        // Lines COPY must not read: the skipped ones and, for a new table, the header.
        let lines_to_skip = skip + usize::from(create.is_some());
        let mut trimmed = None;
        let source = if lines_to_skip > 1 {
            match copy_without_first_lines(file, lines_to_skip) {
                Ok(temp) => trimmed.insert(temp).path.clone(),
                Err(message) => {
                    self.error(&message);
                    return false;
                }
            }
        } else {
            file.clone()
        };
        let header = if lines_to_skip == 1 { ", HEADER" } else { "" };
        let copy = format!(
            "COPY {} FROM {} (FORMAT csv{header})",
            quote_ident(&name),
            sql_literal(&source)
        );
        let own_transaction = !self.conn.in_transaction();
        let mut statements: Vec<String> = Vec::new();
        statements.extend(create);
        statements.push(copy);
        let ok = self.run_import_statements(&statements, own_transaction);
        drop(trimmed);
        ok
    }

    /// Runs the import's statements, in a transaction of their own when none is open;
    /// prints the COPY's tag.
    fn run_import_statements(&mut self, statements: &[String], own_transaction: bool) -> bool {
        if own_transaction && self.query("BEGIN").is_none() {
            return false;
        }
        let mut tag = String::new();
        for sql in statements {
            match self.query(sql) {
                Some(result) => tag = result.tag,
                None => {
                    if own_transaction {
                        let _ = self.conn.execute("ROLLBACK", &[]);
                    }
                    return false;
                }
            }
        }
        if own_transaction && self.query("COMMIT").is_none() {
            return false;
        }
        self.print(&format!("{tag}\n"));
        true
    }

    /// Whether a table or view named `name` exists; `None` after printing an error.
    fn table_exists(&mut self, name: &str) -> Option<bool> {
        let sql = format!(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = {}",
            sql_literal(name)
        );
        let result = self.query(&sql)?;
        let count = result.rows.first().and_then(|r| r.value(0)).map(|v| v.to_string());
        Some(count.as_deref() != Some("0"))
    }
}

/// `name` as a quoted SQL identifier.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn create_table_sql(name: &str, columns: &[String]) -> String {
    let columns: Vec<String> = columns.iter().map(|c| format!("{} TEXT", quote_ident(c))).collect();
    format!("CREATE TABLE {} ({})", quote_ident(name), columns.join(", "))
}

/// The column names in line `skip + 1` of `file` (a CSV record on one line).
fn header_columns(file: &str, skip: usize) -> Result<Vec<String>, String> {
    let f = std::fs::File::open(file)
        .map_err(|e| format!("could not open file \"{file}\" for reading: {e}"))?;
    let mut lines = BufReader::new(f).lines();
    let line = match lines.nth(skip) {
        Some(Ok(line)) => line,
        Some(Err(e)) => return Err(format!("could not read file \"{file}\": {e}")),
        None => {
            return Err(format!(
                "file \"{file}\" has no row to name the columns of the new table"
            ));
        }
    };
    let line = line.strip_prefix('\u{feff}').unwrap_or(&line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    let names = parse_csv_line(line).ok_or_else(|| {
        format!("the header row of \"{file}\" has an unterminated quoted field (a header must be one line)")
    })?;
    if let Some(k) = names.iter().position(String::is_empty) {
        return Err(format!(
            "column {} of the header row of \"{file}\" is empty: a new table needs a name for each column",
            k + 1
        ));
    }
    Ok(names)
}

/// One CSV record that is a whole line (RFC 4180 quoting); `None` when a quoted
/// field does not end on the line.
fn parse_csv_line(line: &str) -> Option<Vec<String>> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut in_quotes = false;
    while let Some(c) = chars.next() {
        match (in_quotes, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => in_quotes = false,
            (true, c) => field.push(c),
            (false, '"') => in_quotes = true,
            (false, ',') => fields.push(std::mem::take(&mut field)),
            (false, c) => field.push(c),
        }
    }
    if in_quotes {
        return None;
    }
    fields.push(field);
    Some(fields)
}

/// A copy of a file without its first lines, removed when dropped.
struct TempFile {
    path: String,
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Copies `file` without its first `lines` lines to a temporary file, for a COPY
/// that can skip only one (HEADER).
fn copy_without_first_lines(file: &str, lines: usize) -> Result<TempFile, String> {
    let f = std::fs::File::open(file)
        .map_err(|e| format!("could not open file \"{file}\" for reading: {e}"))?;
    let mut reader = BufReader::new(f);
    let mut line = Vec::new();
    for _ in 0..lines {
        line.clear();
        reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("could not read file \"{file}\": {e}"))?;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let path = std::env::temp_dir().join(format!("beedb-import-{}-{nanos}.csv", std::process::id()));
    let temp = TempFile {
        path: path.to_string_lossy().into_owned(),
    };
    let write_error = |e: std::io::Error| format!("could not write \"{}\": {e}", temp.path);
    let mut out = std::fs::File::create(&path).map_err(write_error)?;
    std::io::copy(&mut reader, &mut out).map_err(write_error)?;
    out.flush().map_err(write_error)?;
    Ok(temp)
}

/// Splits a command line into words; `'…'` and `"…"` keep spaces (the quotes of a
/// `"…"` word are kept, so a quoted table name stays quoted). `None` for an
/// unterminated quote.
fn split_words(s: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut word = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() {
                break;
            }
            chars.next();
            if c == '\'' || c == '"' {
                if c == '"' {
                    word.push(c);
                }
                loop {
                    match chars.next() {
                        None => return None,
                        Some(q) if q == c => break,
                        Some(other) => word.push(other),
                    }
                }
                if c == '"' {
                    word.push(c);
                }
            } else {
                word.push(c);
            }
        }
        words.push(word);
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_lines_parse_with_quotes() {
        assert_eq!(parse_csv_line("a,b,c").unwrap(), ["a", "b", "c"]);
        assert_eq!(parse_csv_line("\"x, y\",\"say \"\"hi\"\"\",").unwrap(), ["x, y", "say \"hi\"", ""]);
        assert_eq!(parse_csv_line("\"open"), None);
    }

    #[test]
    fn words_keep_quoted_spaces() {
        assert_eq!(split_words("--skip 1 'my file.csv' t").unwrap(), ["--skip", "1", "my file.csv", "t"]);
        assert_eq!(split_words("f.csv \"My T\"").unwrap(), ["f.csv", "\"My T\""]);
        assert_eq!(split_words("'open"), None);
    }

    #[test]
    fn create_statement_quotes_names() {
        assert_eq!(
            create_table_sql("t", &["a b".into(), "c\"d".into()]),
            "CREATE TABLE \"t\" (\"a b\" TEXT, \"c\"\"d\" TEXT)"
        );
    }
}
