//! COPY … FROM 'file' and COPY table | (query) TO 'file': PostgreSQL's text format
//! (with TPC-H's trailing delimiter accepted on input) and CSV, with the options in
//! both spellings (`(FORMAT csv, HEADER)` and the older `CSV HEADER`, `WITH DELIMITER`).

use std::io::{BufRead, BufReader, BufWriter, Read, Write};

use sqlparser::ast;

use super::Ctx;
use super::dml::affected;
use crate::binder::{ident, object_name};
use crate::error::{Error, Result};
use crate::exec::dml as xdml;
use crate::session::QueryResult;
use crate::types::Value;

#[derive(Debug, Clone)]
struct Options {
    csv: bool,
    delimiter: char,
    header: bool,
    null: String,
    quote: char,
    /// CSV: the character that makes the next quote character literal inside a quoted
    /// field (PostgreSQL's default: the quote character itself).
    escape: char,
    /// COPY TO, CSV: columns always quoted (`FORCE_QUOTE (…)`; sqlparser does not
    /// parse PostgreSQL's `FORCE_QUOTE *`).
    force_quote: Vec<String>,
    /// COPY FROM, CSV: columns whose unquoted null string is read as a value.
    force_not_null: Vec<String>,
    /// COPY FROM, CSV: columns whose quoted null string is read as NULL.
    force_null: Vec<String>,
}

fn force_columns(cols: &[ast::Ident]) -> Vec<String> {
    cols.iter().map(ident).collect()
}

fn single_byte(what: &str, c: char) -> Result<char> {
    if c.is_ascii() && c != '\r' && c != '\n' {
        Ok(c)
    } else {
        Err(Error::semantic("0A000", format!("COPY {what} must be a single one-byte character")))
    }
}

fn options(opts: &[ast::CopyOption], legacy: &[ast::CopyLegacyOption]) -> Result<Options> {
    let mut o = Options {
        csv: false,
        delimiter: '\t',
        header: false,
        null: "\\N".into(),
        quote: '"',
        escape: '"',
        force_quote: Vec::new(),
        force_not_null: Vec::new(),
        force_null: Vec::new(),
    };
    let mut delim = None;
    let mut null = None;
    let mut escape = None;
    for x in opts {
        match x {
            ast::CopyOption::Format(f) => match f.value.to_ascii_lowercase().as_str() {
                "csv" => o.csv = true,
                "text" => o.csv = false,
                other => return Err(Error::not_supported(format!("COPY format \"{other}\" is not supported"))),
            },
            ast::CopyOption::Delimiter(c) => delim = Some(*c),
            ast::CopyOption::Header(h) => o.header = *h,
            ast::CopyOption::Null(s) => null = Some(s.clone()),
            ast::CopyOption::Quote(c) => o.quote = single_byte("quote", *c)?,
            ast::CopyOption::Escape(c) => escape = Some(single_byte("escape", *c)?),
            ast::CopyOption::ForceQuote(cols) => o.force_quote = force_columns(cols),
            ast::CopyOption::ForceNotNull(cols) => o.force_not_null = force_columns(cols),
            ast::CopyOption::ForceNull(cols) => o.force_null = force_columns(cols),
            ast::CopyOption::Encoding(e) => check_encoding(e)?,
            other => return Err(Error::not_supported(format!("COPY option {other} is not supported"))),
        }
    }
    for x in legacy {
        match x {
            ast::CopyLegacyOption::Delimiter(c) => delim = Some(*c),
            ast::CopyLegacyOption::Header => o.header = true,
            ast::CopyLegacyOption::Null(s) => null = Some(s.clone()),
            ast::CopyLegacyOption::Csv(csv) => {
                o.csv = true;
                for c in csv {
                    match c {
                        ast::CopyLegacyCsvOption::Header => o.header = true,
                        ast::CopyLegacyCsvOption::Quote(q) => o.quote = single_byte("quote", *q)?,
                        ast::CopyLegacyCsvOption::Escape(e) => escape = Some(single_byte("escape", *e)?),
                        ast::CopyLegacyCsvOption::ForceQuote(cols) => o.force_quote = force_columns(cols),
                        ast::CopyLegacyCsvOption::ForceNotNull(cols) => o.force_not_null = force_columns(cols),
                    }
                }
            }
            other => return Err(Error::not_supported(format!("COPY option {other} is not supported"))),
        }
    }
    if o.csv {
        o.delimiter = ',';
        o.null = String::new();
    } else if escape.is_some()
        || !o.force_quote.is_empty()
        || !o.force_not_null.is_empty()
        || !o.force_null.is_empty()
    {
        return Err(Error::semantic("0A000", "COPY ESCAPE, FORCE_QUOTE, FORCE_NOT_NULL and FORCE_NULL are available only in CSV mode"));
    }
    if let Some(d) = delim {
        o.delimiter = single_byte("delimiter", d)?;
    }
    if let Some(n) = null {
        o.null = n;
    }
    o.escape = escape.unwrap_or(o.quote);
    if o.csv && (o.delimiter == o.quote) {
        return Err(Error::semantic("22023", "COPY delimiter and quote must be different"));
    }
    Ok(o)
}

/// BeeDB reads and writes UTF-8 only.
fn check_encoding(e: &str) -> Result<()> {
    let norm: String = e.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    if norm == "utf8" {
        Ok(())
    } else {
        Err(Error::not_supported(format!("COPY ENCODING '{e}' (only UTF8) is not supported")))
    }
}

/// Splits a text-format line; `None` fields are NULL. A backslash makes the next
/// character data (so an escaped delimiter does not split), `\b \f \n \r \t \v` are
/// control characters, `\NNN` octal and `\xHH` hexadecimal bytes; a field whose raw
/// text is the null string is NULL, as in PostgreSQL.
fn split_text(line: &str, o: &Options) -> Result<Vec<Option<String>>> {
    let mut fields = Vec::new();
    let mut raw_start = 0;
    let mut value: Vec<u8> = Vec::new();
    let bytes = line.as_bytes();
    let delimiter = o.delimiter as u8; // one ASCII byte (`single_byte`)
    let mut i = 0;
    let finish = |raw: &str, value: &mut Vec<u8>, fields: &mut Vec<Option<String>>| -> Result<()> {
        let v = std::mem::take(value);
        if raw == o.null {
            fields.push(None);
        } else {
            let text = String::from_utf8(v)
                .map_err(|_| Error::data("22021", "invalid byte sequence for encoding \"UTF8\" (from a backslash escape)"))?;
            fields.push(Some(text));
        }
        Ok(())
    };
    while i < bytes.len() {
        let b = bytes[i];
        if b == delimiter {
            finish(&line[raw_start..i], &mut value, &mut fields)?;
            i += 1;
            raw_start = i;
            continue;
        }
        if b != b'\\' || i + 1 >= bytes.len() {
            value.push(b);
            i += 1;
            continue;
        }
        let c = bytes[i + 1];
        i += 2;
        match c {
            b'b' => value.push(8),
            b'f' => value.push(12),
            b'n' => value.push(b'\n'),
            b'r' => value.push(b'\r'),
            b't' => value.push(b'\t'),
            b'v' => value.push(11),
            b'0'..=b'7' => {
                let mut n = u32::from(c - b'0');
                for _ in 0..2 {
                    match bytes.get(i) {
                        Some(d @ b'0'..=b'7') => {
                            n = n * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                value.push((n & 0xff) as u8);
            }
            b'x' if bytes.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                let mut n = 0u32;
                for _ in 0..2 {
                    match bytes.get(i) {
                        Some(d) if d.is_ascii_hexdigit() => {
                            n = n * 16 + (*d as char).to_digit(16).unwrap_or(0);
                            i += 1;
                        }
                        _ => break,
                    }
                }
                value.push(n as u8);
            }
            other => value.push(other),
        }
    }
    finish(&line[raw_start..], &mut value, &mut fields)?;
    Ok(fields)
}

/// One CSV field as read: its text and whether it was quoted (a quoted null string is
/// a value, unless FORCE_NULL names the column).
struct Field {
    text: String,
    quoted: bool,
}

/// Splits a CSV record, which may span lines: `more` reads the next line, and a line
/// break inside a quoted field is kept as it was in the file (`\n` or `\r\n`).
fn split_csv(first: Line, o: &Options, more: &mut dyn FnMut() -> Result<Option<Line>>) -> Result<Vec<Field>> {
    let mut fields = Vec::new();
    let mut line = first;
    let mut chars: Vec<char> = line.text.chars().collect();
    let mut i = 0;
    loop {
        let mut f = String::new();
        let mut quoted = false;
        if i < chars.len() && chars[i] == o.quote {
            quoted = true;
            i += 1;
            loop {
                if i >= chars.len() {
                    match more()? {
                        Some(next) => {
                            f.push_str(if line.crlf { "\r\n" } else { "\n" });
                            line = next;
                            chars = line.text.chars().collect();
                            i = 0;
                            continue;
                        }
                        None => return Err(Error::data("22P04", "unterminated CSV quoted field")),
                    }
                }
                let c = chars[i];
                if c == o.escape && i + 1 < chars.len() && (chars[i + 1] == o.quote || chars[i + 1] == o.escape) {
                    f.push(chars[i + 1]);
                    i += 2;
                    continue;
                }
                if c == o.quote {
                    i += 1;
                    break;
                }
                f.push(c);
                i += 1;
            }
        }
        while i < chars.len() && chars[i] != o.delimiter {
            f.push(chars[i]);
            i += 1;
        }
        fields.push(Field { text: f, quoted });
        if i >= chars.len() {
            break;
        }
        i += 1; // the delimiter
    }
    Ok(fields)
}

pub fn copy(
    ctx: &mut Ctx<'_>,
    source: &ast::CopySource,
    to: bool,
    target: &ast::CopyTarget,
    opts: &[ast::CopyOption],
    legacy: &[ast::CopyLegacyOption],
) -> Result<QueryResult> {
    if to {
        return copy_to(ctx, source, target, &options(opts, legacy)?);
    }
    let ast::CopySource::Table { table_name, columns } = source else {
        return Err(Error::semantic("42601", "COPY (query) FROM is not possible: COPY FROM needs a table"));
    };
    let ast::CopyTarget::File { filename } = target else {
        return Err(Error::not_supported("COPY FROM STDIN or a program is not supported; name a file"));
    };
    let o = options(opts, legacy)?;
    let name = object_name(table_name)?;
    let table = ctx.catalog().table(&name).cloned().ok_or_else(|| Error::undefined_table(&name))?;
    let targets: Vec<usize> = if columns.is_empty() {
        (0..table.columns.len()).collect()
    } else {
        columns
            .iter()
            .map(|c| {
                let n = ident(c);
                table.column_index(&n).ok_or_else(|| {
                    Error::undefined_column(&n)
                        .with_message(format!("column \"{n}\" of relation \"{name}\" does not exist"))
                })
            })
            .collect::<Result<_>>()?
    };
    // FORCE_NOT_NULL / FORCE_NULL, per position of the copied columns.
    let flags = |names: &[String], option: &str| -> Result<Vec<bool>> {
        for n in names {
            if !targets.iter().any(|&c| table.columns[c].name == *n) {
                return Err(Error::semantic("42P10", format!("{option} column \"{n}\" not referenced by COPY")));
            }
        }
        Ok(targets.iter().map(|&c| names.contains(&table.columns[c].name)).collect())
    };
    let force_not_null = flags(&o.force_not_null, "FORCE_NOT_NULL")?;
    let force_null = flags(&o.force_null, "FORCE_NULL")?;
    if !o.force_quote.is_empty() {
        return Err(Error::semantic("0A000", "COPY FORCE_QUOTE is available only in COPY TO"));
    }
    let file = std::fs::File::open(filename)
        .map_err(|e| Error::io(format!("could not open file \"{filename}\" for reading: {e}")))?;
    let mut lines = LineReader::new(file, filename);
    if o.header {
        lines.next()?;
    }
    // Defaults for columns not named.
    let mut defaults: Vec<Value> = vec![Value::Null; table.columns.len()];
    // Defaults that number rows (SERIAL, identity), computed for each row.
    let mut per_row = Vec::new();
    for c in (0..table.columns.len()).filter(|c| !targets.contains(c)) {
        match super::dml::RowDefault::of(ctx, &table, c)? {
            super::dml::RowDefault::Once(v) => defaults[c] = v,
            numbered => per_row.push((c, numbered)),
        }
    }
    let checks = super::check::RowChecks::of(ctx, &table)?;
    let mut foreign_keys = super::fk::Tracker::of(ctx.catalog(), &table)?;
    // COPY is how many rows are loaded: the form bee from the first line.
    let mut former = ctx.row_former(&table, usize::MAX)?;
    let w = ctx.txn.writer()?;
    let mut count = 0usize;
    while let Some(line) = lines.next()? {
        if !o.csv && line.text == "\\." {
            break;
        }
        let at = lines.lineno;
        let context = |e: Error| {
            let m = format!("{} (COPY {name}, line {at})", e.message);
            e.with_message(m)
        };
        let mut fields = if o.csv {
            let fields = split_csv(line, &o, &mut || lines.next()).map_err(context)?;
            fields
                .into_iter()
                .enumerate()
                .map(|(k, f)| {
                    let is_null = if f.quoted {
                        force_null.get(k).copied().unwrap_or(false) && f.text == o.null
                    } else {
                        f.text == o.null && !force_not_null.get(k).copied().unwrap_or(false)
                    };
                    (!is_null).then_some(f.text)
                })
                .collect()
        } else {
            split_text(&line.text, &o).map_err(context)?
        };
        // TPC-H's .tbl files end each line with the delimiter.
        if fields.len() == targets.len() + 1 && matches!(fields.last(), Some(Some(s)) if s.is_empty()) {
            fields.pop();
        }
        if fields.len() > targets.len() {
            return Err(context(Error::data("22P04", "extra data after last expected column")));
        }
        if fields.len() < targets.len() {
            let missing = &table.columns[targets[fields.len()]].name;
            return Err(context(Error::data("22P04", format!("missing data for column \"{missing}\""))));
        }
        let mut row = defaults.clone();
        for (c, d) in &per_row {
            row[*c] = d.next(ctx).map_err(context)?;
        }
        for (f, &c) in fields.into_iter().zip(&targets) {
            row[c] = match f {
                None => Value::Null,
                Some(s) => Value::parse(&s, &table.columns[c].ty).map_err(|e| context(Error::from(e)))?,
            };
        }
        checks
            .verify(ctx, &table, &row)
            .and_then(|()| xdml::insert_row_with(w, &table, &row, former.as_mut()))
            .map_err(|e| context(super::dml::with_constraint_detail(e, &table, &row)))?;
        foreign_keys.inserted(&row);
        count += 1;
        if count % super::dml::CHECK_EVERY == 0 {
            ctx.interrupt.check()?;
        }
    }
    foreign_keys.finish(ctx)?;
    ctx.note_inserts(&table, count);
    ctx.store_relation_size(&table);
    super::analyze::analyze_if_stale(ctx, &table)?;
    Ok(affected(format!("COPY {count}"), count))
}

/// One line of a COPY input file, without its line break.
struct Line {
    text: String,
    /// Whether it ended with `\r\n` (kept inside a quoted CSV field).
    crlf: bool,
}

/// The longest line COPY FROM reads (without its line end). A longer one, or input
/// with no line end at all (`/dev/zero`), is an error (SQLSTATE 54000) after reading
/// at most this much, instead of growing the line buffer until the process dies.
pub const MAX_COPY_LINE_BYTES: usize = 64 << 20;

/// Reads a COPY input file line by line, counting lines for error messages; a line
/// that is not UTF-8 is an error naming the file and the line.
struct LineReader<'f> {
    inner: BufReader<std::fs::File>,
    filename: &'f str,
    /// The number of the line read last (1-based).
    lineno: usize,
    buf: Vec<u8>,
}

impl<'f> LineReader<'f> {
    fn new(file: std::fs::File, filename: &'f str) -> LineReader<'f> {
        LineReader { inner: BufReader::with_capacity(1 << 20, file), filename, lineno: 0, buf: Vec::new() }
    }

    fn next(&mut self) -> Result<Option<Line>> {
        self.buf.clear();
        // Room for the longest line and its `\r\n`.
        let most = MAX_COPY_LINE_BYTES as u64 + 2;
        let n = (&mut self.inner)
            .take(most)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| Error::io(format!("could not read file \"{}\": {e}", self.filename)))?;
        if n == 0 {
            return Ok(None);
        }
        self.lineno += 1;
        let too_long = || {
            Error::new(
                crate::error::ErrorKind::Limit,
                "54000",
                format!(
                    "line {} of file \"{}\" is longer than COPY's maximum of {} bytes",
                    self.lineno, self.filename, MAX_COPY_LINE_BYTES
                ),
            )
        };
        let mut crlf = false;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
                crlf = true;
            }
        } else if n as u64 == most {
            return Err(too_long());
        }
        if self.buf.len() > MAX_COPY_LINE_BYTES {
            return Err(too_long());
        }
        match std::str::from_utf8(&self.buf) {
            Ok(text) => Ok(Some(Line { text: text.to_string(), crlf })),
            Err(e) => Err(Error::data(
                "22021",
                format!(
                    "invalid byte sequence for encoding \"UTF8\" at byte {} of line {} of file \"{}\"",
                    e.valid_up_to() + 1,
                    self.lineno,
                    self.filename
                ),
            )),
        }
    }
}

/// COPY table [(columns)] | (query) TO 'file': the rows stream from the executor into
/// the file batch by batch, so the result is never held whole.
fn copy_to(ctx: &mut Ctx<'_>, source: &ast::CopySource, target: &ast::CopyTarget, o: &Options) -> Result<QueryResult> {
    let filename = match target {
        ast::CopyTarget::File { filename } => filename,
        ast::CopyTarget::Stdout => {
            return Err(Error::not_supported(
                "COPY … TO STDOUT is not supported; name a file, or run the query in the shell with .mode csv",
            ));
        }
        _ => return Err(Error::not_supported("COPY … TO a program is not supported; name a file")),
    };
    if !o.force_not_null.is_empty() || !o.force_null.is_empty() {
        return Err(Error::semantic("0A000", "COPY FORCE_NOT_NULL and FORCE_NULL are available only in COPY FROM"));
    }
    let (bq, params) = match source {
        ast::CopySource::Query(q) => super::query::plan_query(ctx, q)?,
        ast::CopySource::Table { table_name, columns } => {
            let name = object_name(table_name)?;
            let Some(table) = ctx.catalog().table(&name).cloned() else {
                if ctx.catalog().view(&name).is_some() {
                    return Err(Error::semantic(
                        "42809",
                        format!("cannot copy from view \"{name}\"; try COPY (SELECT ...) TO"),
                    ));
                }
                return Err(Error::undefined_table(&name));
            };
            let cols = if columns.is_empty() {
                table.columns.iter().map(|c| c.name.clone()).collect()
            } else {
                columns
                    .iter()
                    .map(|c| {
                        let n = ident(c);
                        table.column_index(&n).map(|_| n.clone()).ok_or_else(|| {
                            Error::undefined_column(&n)
                                .with_message(format!("column \"{n}\" of relation \"{name}\" does not exist"))
                        })
                    })
                    .collect::<Result<Vec<_>>>()?
            };
            // The table's rows are the query `SELECT cols FROM table`, planned as any query.
            let quote = |n: &str| format!("\"{}\"", n.replace('"', "\"\""));
            let sql = format!(
                "SELECT {} FROM {}",
                cols.iter().map(|c| quote(c)).collect::<Vec<_>>().join(", "),
                quote(&table.name)
            );
            let mut parsed = crate::parser::parse(&sql)?;
            let Some(ast::Statement::Query(q)) = parsed.pop() else {
                return Err(Error::internal("COPY TO built a statement that is not a query"));
            };
            super::query::plan_query(ctx, &q)?
        }
    };
    let quoted_columns: Vec<bool> = bq.plan.schema.iter().map(|c| o.force_quote.contains(&c.name)).collect();
    if let Some(n) = o.force_quote.iter().find(|n| !bq.plan.schema.iter().any(|c| &c.name == *n)) {
        return Err(Error::semantic("42P10", format!("FORCE_QUOTE column \"{n}\" not referenced by COPY")));
    }
    let file = std::fs::File::create(filename)
        .map_err(|e| Error::io(format!("could not open file \"{filename}\" for writing: {e}")))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let write_error = |e: std::io::Error| Error::io(format!("could not write to file \"{filename}\": {e}"));
    let mut line = String::new();
    if o.header {
        for (k, c) in bq.plan.schema.iter().enumerate() {
            if k > 0 {
                line.push(o.delimiter);
            }
            put_field(&mut line, &c.name, o, o.csv && quoted_columns[k]);
        }
        line.push('\n');
        out.write_all(line.as_bytes()).map_err(write_error)?;
    }
    let mut count = 0usize;
    let mut failed = None;
    super::query::stream(ctx, &bq, &params, &mut |batch| {
        for r in 0..batch.rows() {
            line.clear();
            for (k, v) in batch.row_values(r).iter().enumerate() {
                if k > 0 {
                    line.push(o.delimiter);
                }
                match v {
                    Value::Null => line.push_str(&o.null),
                    // PostgreSQL's output form of booleans (a cast to text spells them out).
                    Value::Boolean(b) => put_field(&mut line, if *b { "t" } else { "f" }, o, quoted_columns[k]),
                    v => put_field(&mut line, &v.to_string(), o, quoted_columns[k]),
                }
            }
            line.push('\n');
            if let Err(e) = out.write_all(line.as_bytes()) {
                failed = Some(write_error(e));
                return Ok(false);
            }
            count += 1;
        }
        Ok(true)
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    out.flush().map_err(write_error)?;
    Ok(affected(format!("COPY {count}"), count))
}

/// Appends one non-NULL field in the output format: text escapes backslashes and the
/// characters that would end the field or the line; CSV quotes a field that holds the
/// delimiter, the quote, a line break, or that would read back as NULL or as the
/// end-of-data marker (and every field of a FORCE_QUOTE column).
fn put_field(line: &mut String, text: &str, o: &Options, force_quote: bool) {
    if !o.csv {
        for c in text.chars() {
            match c {
                '\\' => line.push_str("\\\\"),
                '\n' => line.push_str("\\n"),
                '\r' => line.push_str("\\r"),
                '\t' => line.push_str("\\t"),
                c if c == o.delimiter => {
                    line.push('\\');
                    line.push(c);
                }
                c => line.push(c),
            }
        }
        return;
    }
    let needs_quotes = force_quote
        || text == o.null
        || text == "\\."
        || text.chars().any(|c| c == o.delimiter || c == o.quote || c == '\n' || c == '\r');
    if !needs_quotes {
        line.push_str(text);
        return;
    }
    line.push(o.quote);
    for c in text.chars() {
        if c == o.quote || c == o.escape {
            line.push(o.escape);
        }
        line.push(c);
    }
    line.push(o.quote);
}
