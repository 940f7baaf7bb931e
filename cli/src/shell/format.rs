//! Output formatting: pure functions from a result's columns and rows to text, one
//! per output mode, plus psql's expanded layout (`\x`) and header switch.
//!
//! Values print as PostgreSQL's text output (their `Display`), except that booleans
//! print `t`/`f` as psql shows them (JSON uses `true`/`false`).

use std::fmt::Write as _;

use beedb::{Column, QueryResult, Row, Value};
use unicode_width::UnicodeWidthStr;

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A box with a header and a row count, like psql and DuckDB.
    Table,
    /// RFC 4180 CSV with a header row; NULL is an empty field.
    Csv,
    /// One JSON array of objects per result.
    Json,
    /// sqlite3's `line` mode: one `name = value` line per column, names
    /// right-aligned, a blank line between rows.
    Line,
    /// A Markdown (GitHub) table: `| a | b |`, then `|---|---|`, then the rows.
    Markdown,
}

/// Everything that decides how a result prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub mode: Mode,
    /// Column names in `table` and `csv` modes (`.headers on|off`).
    pub headers: bool,
    /// psql's expanded display (`\x`): in `table` mode each row prints as a
    /// `-[ RECORD n ]` block of `name | value` lines.
    pub expanded: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            mode: Mode::Table,
            headers: true,
            expanded: false,
        }
    }
}

impl Mode {
    pub fn parse(name: &str) -> Option<Mode> {
        match name.to_ascii_lowercase().as_str() {
            "table" | "box" => Some(Mode::Table),
            "csv" => Some(Mode::Csv),
            "json" => Some(Mode::Json),
            "line" => Some(Mode::Line),
            "markdown" | "md" => Some(Mode::Markdown),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Table => "table",
            Mode::Csv => "csv",
            Mode::Json => "json",
            Mode::Line => "line",
            Mode::Markdown => "markdown",
        }
    }
}

/// The whole output for one statement's result, ending in a newline (or empty).
/// Statements without rows print their command tag in every mode, so a program
/// driving the shell sees each statement finish.
pub fn render(options: &Options, result: &QueryResult) -> String {
    if !result.has_rows() {
        return if result.tag.is_empty() {
            String::new()
        } else {
            format!("{}\n", result.tag)
        };
    }
    let (columns, rows) = (&result.columns, &result.rows);
    match options.mode {
        Mode::Table if options.expanded => render_expanded(columns, rows),
        Mode::Table => render_table(columns, rows, options.headers),
        Mode::Csv => render_csv(columns, rows, options.headers),
        Mode::Json => render_json(columns, rows),
        Mode::Line => render_line(columns, rows),
        Mode::Markdown => render_markdown(columns, rows),
    }
}

/// The names of all modes, for usage messages.
pub const MODE_NAMES: &str = "table, csv, json, line or markdown";

/// A value's text as the shell shows it; `None` for NULL.
pub fn value_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Boolean(b) => Some(if *b { "t" } else { "f" }.to_string()),
        other => Some(other.to_string()),
    }
}

// ---------------------------------------------------------------------------------
// table

/// Display width of a string on a terminal (wide characters count two).
pub fn display_width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// Makes one line of a cell printable: tabs expand to the next multiple of 8 columns,
/// other control characters show as `\xNN`.
fn printable(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        match c {
            '\t' => {
                let w = display_width(&out);
                out.extend(std::iter::repeat_n(' ', 8 - w % 8));
            }
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A cell split into printable lines.
/// Every row's cells, each made by `cell` from its value (a missing value as NULL).
fn grid<T>(rows: &[Row], ncols: usize, cell: impl Fn(&Value) -> T) -> Vec<Vec<T>> {
    rows.iter().map(|r| (0..ncols).map(|i| cell(r.value(i).unwrap_or(&Value::Null))).collect()).collect()
}

fn cell_lines(v: &Value) -> Vec<String> {
    match value_text(v) {
        None => vec!["NULL".to_string()],
        Some(s) => s
            .split('\n')
            .map(|l| printable(l.strip_suffix('\r').unwrap_or(l)))
            .collect(),
    }
}

fn pad(out: &mut String, s: &str, width: usize, right: bool) {
    let fill = width.saturating_sub(display_width(s));
    if right {
        out.extend(std::iter::repeat_n(' ', fill));
        out.push_str(s);
    } else {
        out.push_str(s);
        out.extend(std::iter::repeat_n(' ', fill));
    }
}

fn center(out: &mut String, s: &str, width: usize) {
    let fill = width.saturating_sub(display_width(s));
    out.extend(std::iter::repeat_n(' ', fill / 2));
    out.push_str(s);
    out.extend(std::iter::repeat_n(' ', fill - fill / 2));
}

fn rule(out: &mut String, widths: &[usize], left: &str, mid: &str, right: &str) {
    out.push_str(left);
    for (i, w) in widths.iter().enumerate() {
        if i > 0 {
            out.push_str(mid);
        }
        out.extend(std::iter::repeat_n('─', w + 2));
    }
    out.push_str(right);
    out.push('\n');
}

/// A box with centred column names (unless `headers` is off), left-aligned text,
/// right-aligned numbers, NULL as `NULL`, multi-line values on several lines, and a
/// row count below.
///
/// ```text
/// ┌────┬──────┐
/// │ id │ name │
/// ├────┼──────┤
/// │  1 │ one  │
/// │  2 │ NULL │
/// └────┴──────┘
/// (2 rows)
/// ```
pub fn render_table(columns: &[Column], rows: &[Row], show_headers: bool) -> String {
    let headers: Vec<String> = if show_headers {
        columns.iter().map(|c| printable(&c.name)).collect()
    } else {
        vec![String::new(); columns.len()]
    };
    let right: Vec<bool> = columns.iter().map(|c| c.data_type.is_numeric()).collect();
    let cells: Vec<Vec<Vec<String>>> = grid(rows, columns.len(), cell_lines);
    let mut widths: Vec<usize> = headers.iter().map(|h| display_width(h)).collect();
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            for line in cell {
                *w = (*w).max(display_width(line));
            }
        }
    }

    let mut out = String::new();
    rule(&mut out, &widths, "┌", "┬", "┐");
    if show_headers {
        out.push('│');
        for (h, w) in headers.iter().zip(&widths) {
            out.push(' ');
            center(&mut out, h, *w);
            out.push_str(" │");
        }
        out.push('\n');
        rule(&mut out, &widths, "├", "┼", "┤");
    }
    for row in &cells {
        let height = row.iter().map(Vec::len).max().unwrap_or(1);
        for k in 0..height {
            out.push('│');
            for (i, cell) in row.iter().enumerate() {
                out.push(' ');
                let line = cell.get(k).map_or("", String::as_str);
                pad(&mut out, line, widths[i], right[i]);
                out.push_str(" │");
            }
            out.push('\n');
        }
    }
    rule(&mut out, &widths, "└", "┴", "┘");
    let n = rows.len();
    let _ = writeln!(out, "({n} row{})", if n == 1 { "" } else { "s" });
    out
}

// ---------------------------------------------------------------------------------
// csv

/// Quotes a CSV field when it must be (RFC 4180): it holds a comma, a quote, a line
/// break, or is empty (so an empty string differs from NULL, as in psql's CSV).
pub fn csv_field(s: &str) -> String {
    if s.is_empty() || s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A header row (unless `headers` is off), then one line per row; NULL is an empty
/// (unquoted) field.
pub fn render_csv(columns: &[Column], rows: &[Row], headers: bool) -> String {
    let mut out = String::new();
    if headers {
        let header: Vec<String> = columns.iter().map(|c| csv_field(&c.name)).collect();
        out.push_str(&header.join(","));
        out.push('\n');
    }
    for row in rows {
        let fields: Vec<String> = (0..columns.len())
            .map(|i| match row.value(i).and_then(value_text) {
                None => String::new(),
                Some(s) => csv_field(&s),
            })
            .collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

// ---------------------------------------------------------------------------------
// expanded (psql's \x)

/// psql's expanded display (border 1): a `-[ RECORD n ]` rule before each row, then
/// one `name | value` line per column, names left-aligned to the widest; lines of a
/// multi-line value after its first have a blank name. No row count, except
/// `(0 rows)` for an empty result, as psql prints.
///
/// ```text
/// -[ RECORD 1 ]-
/// id   | 1
/// name | one
/// ```
pub fn render_expanded(columns: &[Column], rows: &[Row]) -> String {
    if rows.is_empty() {
        return "(0 rows)\n".to_string();
    }
    let names: Vec<String> = columns.iter().map(|c| printable(&c.name)).collect();
    let cells: Vec<Vec<Vec<String>>> = grid(rows, columns.len(), cell_lines);
    let name_width = names.iter().map(|n| display_width(n)).max().unwrap_or(0);
    let value_width = cells
        .iter()
        .flatten()
        .flatten()
        .map(|l| display_width(l))
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (r, row) in cells.iter().enumerate() {
        out.push_str(&record_rule(r + 1, name_width, value_width));
        for (name, cell) in names.iter().zip(row) {
            for (k, line) in cell.iter().enumerate() {
                pad(&mut out, if k == 0 { name } else { "" }, name_width, false);
                out.push_str(" | ");
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// The rule above record `n`, as psql draws it: `-[ RECORD n ]` then dashes to the
/// full width (`name_width + 3 + value_width`), with a `+` above the `|` column when
/// the label ends before it.
fn record_rule(n: usize, name_width: usize, value_width: usize) -> String {
    let mut line = format!("-[ RECORD {n} ]");
    let label = line.len();
    for col in label..name_width + 3 + value_width {
        line.push(if col == name_width + 1 { '+' } else { '-' });
    }
    line.push('\n');
    line
}

// ---------------------------------------------------------------------------------
// line (sqlite3's .mode line)

/// sqlite3's line mode: `name = value` for each column, names right-aligned to the
/// widest, NULL as `NULL`, a blank line between rows.
///
/// ```text
///   id = 1
/// name = one
/// ```
pub fn render_line(columns: &[Column], rows: &[Row]) -> String {
    let names: Vec<String> = columns.iter().map(|c| printable(&c.name)).collect();
    let width = names.iter().map(|n| display_width(n)).max().unwrap_or(0);
    let mut out = String::new();
    for (r, row) in rows.iter().enumerate() {
        if r > 0 {
            out.push('\n');
        }
        for (i, name) in names.iter().enumerate() {
            pad(&mut out, name, width, true);
            out.push_str(" = ");
            match row.value(i).and_then(value_text) {
                None => out.push_str("NULL"),
                Some(s) => out.push_str(&s),
            }
            out.push('\n');
        }
    }
    out
}

// ---------------------------------------------------------------------------------
// markdown

/// A cell's text for a Markdown table: `|` escaped as `\|` (it would end the cell)
/// and line breaks as `<br>` (a row must stay on one line); NULL as `NULL`.
fn markdown_cell(v: &Value) -> String {
    match value_text(v) {
        None => "NULL".to_string(),
        Some(s) => printable(
            &s.replace("\r\n", "\n")
                .replace('|', "\\|")
                .replace('\n', "<br>"),
        ),
    }
}

/// A Markdown (GitHub) table as sqlite3's markdown mode writes it: centred names,
/// a `|---|` separator as wide as each column, text left-aligned and numbers
/// right-aligned; no row count.
///
/// ```text
/// | id | name |
/// |----|------|
/// |  1 | one  |
/// ```
pub fn render_markdown(columns: &[Column], rows: &[Row]) -> String {
    let headers: Vec<String> = columns
        .iter()
        .map(|c| printable(&c.name.replace('|', "\\|")))
        .collect();
    let right: Vec<bool> = columns.iter().map(|c| c.data_type.is_numeric()).collect();
    let cells: Vec<Vec<String>> = grid(rows, columns.len(), markdown_cell);
    let mut widths: Vec<usize> = headers.iter().map(|h| display_width(h)).collect();
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(display_width(cell));
        }
    }
    let mut out = String::from("|");
    for (h, w) in headers.iter().zip(&widths) {
        out.push(' ');
        center(&mut out, h, *w);
        out.push_str(" |");
    }
    out.push_str("\n|");
    for w in &widths {
        out.extend(std::iter::repeat_n('-', w + 2));
        out.push('|');
    }
    out.push('\n');
    for row in &cells {
        out.push('|');
        for (i, cell) in row.iter().enumerate() {
            out.push(' ');
            pad(&mut out, cell, widths[i], right[i]);
            out.push_str(" |");
        }
        out.push('\n');
    }
    out
}

// ---------------------------------------------------------------------------------
// psql's aligned layout (backslash commands)

/// psql's default aligned layout (border 1), for the backslash commands' reports:
/// an optional title centred above, names centred, ` | ` between columns, a
/// `---+---` rule, text left-aligned (the last column unpadded) and numbers
/// (`right[i]`) right-aligned, then the footer lines as given.
///
/// ```text
///   List of relations
///  Schema | Name | Type
/// --------+------+-------
///  public | t    | table
/// (1 row)
/// ```
pub fn render_aligned(
    title: Option<&str>,
    headers: &[&str],
    right: &[bool],
    rows: &[Vec<String>],
    footers: &[String],
) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| display_width(h)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(display_width(cell));
        }
    }
    let total = widths.iter().sum::<usize>() + (3 * widths.len()).saturating_sub(1);
    let mut out = String::new();
    if let Some(title) = title {
        let fill = total.saturating_sub(display_width(title)) / 2;
        out.extend(std::iter::repeat_n(' ', fill));
        out.push_str(title);
        out.push('\n');
    }
    for (i, (h, w)) in headers.iter().zip(&widths).enumerate() {
        out.push_str(if i == 0 { " " } else { " | " });
        center(&mut out, h, *w);
    }
    out.push_str(" \n");
    for (i, w) in widths.iter().enumerate() {
        if i > 0 {
            out.push('+');
        }
        out.extend(std::iter::repeat_n('-', w + 2));
    }
    out.push('\n');
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            out.push_str(if i == 0 { " " } else { " | " });
            let last = i + 1 == row.len();
            let is_right = right.get(i).copied().unwrap_or(false);
            if last && !is_right {
                out.push_str(cell);
            } else {
                pad(&mut out, cell, widths[i], is_right);
            }
        }
        out.push('\n');
    }
    for footer in footers {
        out.push_str(footer);
        out.push('\n');
    }
    out
}

/// psql's row-count footer: `(1 row)`, `(2 rows)`.
pub fn row_count(n: usize) -> String {
    format!("({n} row{})", if n == 1 { "" } else { "s" })
}

// ---------------------------------------------------------------------------------
// json

pub use beedb::types::json::json_string;

/// Whether `s` is a number in JSON's grammar:
/// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
pub fn is_json_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// A value as JSON: numbers as numbers (decimals written exactly, with their scale),
/// NULL as null, booleans as true/false, everything else (and the floats JSON cannot
/// write: NaN, ±Infinity) as strings.
pub fn json_value(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Boolean(b) => b.to_string(),
        Value::SmallInt(_)
        | Value::Integer(_)
        | Value::BigInt(_)
        | Value::Real(_)
        | Value::Double(_)
        | Value::Decimal(_) => {
            let s = v.to_string();
            if is_json_number(&s) {
                s
            } else {
                json_string(&s)
            }
        }
        other => json_string(&other.to_string()),
    }
}

/// `[{"a":1,"b":"x"},` one row per line `{"a":2,"b":null}]`; no rows is `[]`.
pub fn render_json(columns: &[Column], rows: &[Row]) -> String {
    let keys: Vec<String> = columns.iter().map(|c| json_string(&c.name)).collect();
    let mut out = String::from("[");
    for (r, row) in rows.iter().enumerate() {
        if r > 0 {
            out.push_str(",\n");
        }
        out.push('{');
        for (i, key) in keys.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(key);
            out.push(':');
            out.push_str(&json_value(row.value(i).unwrap_or(&Value::Null)));
        }
        out.push('}');
    }
    out.push_str("]\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use beedb::DataType;
    use beedb::types::{Date, Decimal, Interval};

    fn col(name: &str, data_type: DataType) -> Column {
        Column {
            name: name.to_string(),
            data_type,
        }
    }

    fn text(s: &str) -> Value {
        Value::Text(s.to_string())
    }

    fn dec(s: &str) -> Value {
        Value::Decimal(Decimal::parse(s).unwrap())
    }

    fn date(y: i64, m: u32, d: u32) -> Value {
        Value::Date(Date::from_ymd(y, m, d).unwrap())
    }

    fn sample() -> (Vec<Column>, Vec<Row>) {
        let columns = vec![
            col("id", DataType::Integer),
            col("name", DataType::Text),
            col("price", DataType::decimal(10, 2).unwrap()),
            col("day", DataType::Date),
            col("ok", DataType::Boolean),
        ];
        let rows = vec![
            Row(vec![
                Value::Integer(1),
                text("plain"),
                dec("12.50"),
                date(2024, 1, 5),
                Value::Boolean(true),
            ]),
            Row(vec![
                Value::Integer(-20),
                text("a, \"quoted\""),
                dec("-0.05"),
                Value::Null,
                Value::Boolean(false),
            ]),
            Row(vec![
                Value::Integer(300),
                Value::Null,
                Value::Null,
                date(1999, 12, 31),
                Value::Null,
            ]),
        ];
        (columns, rows)
    }

    #[test]
    fn table_aligns_numbers_right_and_text_left() {
        let (columns, rows) = sample();
        let out = render_table(&columns, &rows, true);
        let expected = "\
┌─────┬─────────────┬───────┬────────────┬──────┐
│ id  │    name     │ price │    day     │  ok  │
├─────┼─────────────┼───────┼────────────┼──────┤
│   1 │ plain       │ 12.50 │ 2024-01-05 │ t    │
│ -20 │ a, \"quoted\" │ -0.05 │ NULL       │ f    │
│ 300 │ NULL        │  NULL │ 1999-12-31 │ NULL │
└─────┴─────────────┴───────┴────────────┴──────┘
(3 rows)
";
        assert_eq!(out, expected, "\n{out}");
    }

    #[test]
    fn table_counts_display_width_of_wide_characters() {
        let columns = vec![col("名前", DataType::Text), col("n", DataType::BigInt)];
        let rows = vec![
            Row(vec![text("日本語"), Value::BigInt(1)]),
            Row(vec![text("café"), Value::BigInt(22)]),
        ];
        let out = render_table(&columns, &rows, true);
        let expected = "\
┌────────┬────┐
│  名前  │ n  │
├────────┼────┤
│ 日本語 │  1 │
│ café   │ 22 │
└────────┴────┘
(2 rows)
";
        assert_eq!(out, expected, "\n{out}");
    }

    #[test]
    fn table_puts_multi_line_values_on_several_lines() {
        let columns = vec![col("a", DataType::Text), col("b", DataType::Integer)];
        let rows = vec![Row(vec![text("one\ntwo\tx"), Value::Integer(7)])];
        let out = render_table(&columns, &rows, true);
        let expected = "\
┌───────────┬───┐
│     a     │ b │
├───────────┼───┤
│ one       │ 7 │
│ two     x │   │
└───────────┴───┘
(1 row)
";
        assert_eq!(out, expected, "\n{out}");
    }

    #[test]
    fn table_with_no_rows() {
        let out = render_table(&[col("x", DataType::Integer)], &[], true);
        assert_eq!(out, "┌───┐\n│ x │\n├───┤\n└───┘\n(0 rows)\n");
    }

    #[test]
    fn commands_print_their_tag_in_every_mode() {
        let r = QueryResult::command("INSERT 0 5");
        for mode in [Mode::Table, Mode::Csv, Mode::Json, Mode::Line, Mode::Markdown] {
            for expanded in [false, true] {
                let options = Options { mode, headers: true, expanded };
                assert_eq!(render(&options, &r), "INSERT 0 5\n");
            }
        }
    }

    #[test]
    fn csv_quotes_and_nulls() {
        let (columns, rows) = sample();
        let out = render_csv(&columns, &rows, true);
        let expected = "\
id,name,price,day,ok
1,plain,12.50,2024-01-05,t
-20,\"a, \"\"quoted\"\"\",-0.05,,f
300,,,1999-12-31,
";
        assert_eq!(out, expected);
    }

    #[test]
    fn csv_quotes_line_breaks_empty_strings_and_headers() {
        let columns = vec![col("a,b", DataType::Text), col("c", DataType::Text)];
        let rows = vec![
            Row(vec![text("line1\nline2"), text("")]),
            Row(vec![text("x\r"), Value::Null]),
        ];
        let out = render_csv(&columns, &rows, true);
        assert_eq!(out, "\"a,b\",c\n\"line1\nline2\",\"\"\n\"x\r\",\n");
    }

    #[test]
    fn csv_prints_other_types_as_postgres_text() {
        let columns = vec![
            col("f", DataType::Double),
            col("i", DataType::Interval),
            col("big", DataType::BigInt),
        ];
        let rows = vec![Row(vec![
            Value::Double(1.5),
            Value::Interval(Interval::new(14, 3, 3_600_000_000)),
            Value::BigInt(i64::MIN),
        ])];
        let out = render_csv(&columns, &rows, true);
        assert_eq!(
            out,
            "f,i,big\n1.5,1 year 2 mons 3 days 01:00:00,-9223372036854775808\n"
        );
    }

    #[test]
    fn json_rows_as_objects() {
        let (columns, rows) = sample();
        let out = render_json(&columns, &rows);
        let expected = r#"[{"id":1,"name":"plain","price":12.50,"day":"2024-01-05","ok":true},
{"id":-20,"name":"a, \"quoted\"","price":-0.05,"day":null,"ok":false},
{"id":300,"name":null,"price":null,"day":"1999-12-31","ok":null}]
"#;
        assert_eq!(out, expected);
    }

    #[test]
    fn json_with_no_rows_is_an_empty_array() {
        assert_eq!(render_json(&[col("x", DataType::Integer)], &[]), "[]\n");
    }

    #[test]
    fn json_numbers_and_escapes() {
        assert_eq!(json_value(&Value::Double(f64::NAN)), "\"NaN\"");
        assert_eq!(json_value(&Value::Double(f64::INFINITY)), "\"Infinity\"");
        assert_eq!(json_value(&Value::Double(0.25)), "0.25");
        assert_eq!(json_value(&Value::Real(-2.5)), "-2.5");
        let big = Value::Double(1e20);
        assert!(is_json_number(&json_value(&big)), "{}", json_value(&big));
        assert_eq!(
            json_value(&dec("123456789012345678901234567890.12345678")),
            "123456789012345678901234567890.12345678"
        );
        assert_eq!(json_value(&Value::SmallInt(-3)), "-3");
        assert_eq!(
            json_string("a\"b\\c\nd\te\u{1}é😀"),
            "\"a\\\"b\\\\c\\nd\\te\\u0001é😀\""
        );
    }

    #[test]
    fn json_number_grammar() {
        for ok in ["0", "-0", "12", "1.50", "-0.05", "1e+20", "2E-3", "1.5e10"] {
            assert!(is_json_number(ok), "{ok}");
        }
        for bad in [
            "", "-", "01", "1.", ".5", "1e", "NaN", "Infinity", "+1", "1 ",
        ] {
            assert!(!is_json_number(bad), "{bad}");
        }
    }

    #[test]
    fn modes_parse() {
        assert_eq!(Mode::parse("CSV"), Some(Mode::Csv));
        assert_eq!(Mode::parse("table"), Some(Mode::Table));
        assert_eq!(Mode::parse("json"), Some(Mode::Json));
        assert_eq!(Mode::parse("line"), Some(Mode::Line));
        assert_eq!(Mode::parse("markdown"), Some(Mode::Markdown));
        assert_eq!(Mode::parse("html"), None);
    }

    #[test]
    fn aligned_is_psqls_layout() {
        let rows = vec![
            vec!["public".to_string(), "items".to_string(), "table".to_string()],
            vec!["public".to_string(), "v".to_string(), "view".to_string()],
        ];
        let out = render_aligned(
            Some("List of relations"),
            &["Schema", "Name", "Type"],
            &[],
            &rows,
            &[row_count(2)],
        );
        let expected = concat!(
            "   List of relations\n",
            " Schema | Name  | Type  \n",
            "--------+-------+-------\n",
            " public | items | table\n",
            " public | v     | view\n",
            "(2 rows)\n",
        );
        assert_eq!(out, expected, "\n{out}");
    }

    #[test]
    fn headers_off_drops_the_names_in_table_and_csv() {
        let columns = vec![col("a", DataType::Integer), col("b", DataType::Text)];
        let rows = vec![Row(vec![Value::Integer(1), text("x")])];
        assert_eq!(
            render_table(&columns, &rows, false),
            "┌───┬───┐\n│ 1 │ x │\n└───┴───┘\n(1 row)\n"
        );
        assert_eq!(render_csv(&columns, &rows, false), "1,x\n");
    }

    #[test]
    fn line_mode_right_aligns_names_with_a_blank_line_between_rows() {
        let (columns, rows) = sample();
        let out = render_line(&columns[..3], &rows[..2]);
        let expected = concat!(
            "   id = 1\n",
            " name = plain\n",
            "price = 12.50\n",
            "\n",
            "   id = -20\n",
            " name = a, \"quoted\"\n",
            "price = -0.05\n",
        );
        assert_eq!(out, expected, "\n{out}");
        assert_eq!(render_line(&columns, &[]), "");
    }

    #[test]
    fn markdown_escapes_pipes_and_line_breaks() {
        let columns = vec![col("id", DataType::Integer), col("a|b", DataType::Text)];
        let rows = vec![
            Row(vec![Value::Integer(1), text("x | y")]),
            Row(vec![Value::Integer(22), text("two\nlines")]),
            Row(vec![Value::Integer(3), Value::Null]),
        ];
        let out = render_markdown(&columns, &rows);
        let expected = "\
| id |     a\\|b     |
|----|--------------|
|  1 | x \\| y       |
| 22 | two<br>lines |
|  3 | NULL         |
";
        assert_eq!(out, expected, "\n{out}");
    }

    #[test]
    fn expanded_prints_a_record_block_per_row() {
        let (columns, rows) = sample();
        let out = render_expanded(&columns[..2], &rows[..2]);
        let expected = "\
-[ RECORD 1 ]-----
id   | 1
name | plain
-[ RECORD 2 ]-----
id   | -20
name | a, \"quoted\"
";
        assert_eq!(out, expected, "\n{out}");
        // A narrow result: the label is longer than the rows.
        let out = render_expanded(&columns[..1], &rows[..1]);
        assert_eq!(out, "-[ RECORD 1 ]\nid | 1\n");
        // Wide names and values: a `+` above the bar.
        let columns = vec![col("a_longer_name", DataType::Text)];
        let rows = vec![Row(vec![text("one\ntwo")])];
        assert_eq!(
            render_expanded(&columns, &rows),
            "-[ RECORD 1 ]-+----\na_longer_name | one\n              | two\n"
        );
        assert_eq!(render_expanded(&columns, &[]), "(0 rows)\n");
    }
}
