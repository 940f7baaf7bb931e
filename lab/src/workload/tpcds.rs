//! TPC-DS: the 99 queries of `shared/tpcds/queries` on data from `tpcgen-cli` (a Rust
//! port of dsdgen) at a scale factor, loaded into every engine; per query each
//! engine's status (ok, wrong answer, error, timeout), its median milliseconds and its
//! time relative to DuckDB's. DuckDB is the reference: TPC-DS publishes no answers for
//! dsdgen's data, so the same queries run on the same data in DuckDB verify BeeDB's
//! (and SQLite's) answers, with TPC-H's comparison rules (numbers within 0.01 or 1e-6
//! relative, text without trailing blanks, rows in order where ORDER BY fixes it).
//!
//! Data: `tpcgen-cli tpcds dat -s SF` writes `|`-delimited `.dat` files whose lines
//! end with a `|` and whose empty fields are NULL. They are rewritten once, when they
//! are generated, into the lab's bulk-load format (no trailing delimiter, `\N` for
//! NULL, [`Engine::bulk_load`]), so every engine loads them through its own bulk path
//! unchanged: PostgreSQL's COPY, which BeeDB's follows, rejects a trailing delimiter
//! ("extra data after last expected column") and reads an empty field as an empty
//! string, so teaching BeeDB's COPY dsdgen's format would make it differ from
//! PostgreSQL's. The files are kept per scale factor and table under
//! `--out/data/tpcds-sfN`; only the tables the chosen queries read are made and loaded.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::bench::{Ctx, Open};
use crate::engine::{Cell, EngineKind, LabError};
use crate::report::{Measurement, Report, Section};
use crate::verify;
use crate::workload::tpch;

/// The 24 tables of `schema.sql`, in load order (dimensions first).
pub const TABLES: [&str; 24] = [
    "call_center",
    "catalog_page",
    "customer_address",
    "customer_demographics",
    "customer",
    "date_dim",
    "household_demographics",
    "income_band",
    "item",
    "promotion",
    "reason",
    "ship_mode",
    "store",
    "time_dim",
    "warehouse",
    "web_page",
    "web_site",
    "inventory",
    "catalog_returns",
    "catalog_sales",
    "store_returns",
    "store_sales",
    "web_returns",
    "web_sales",
];

/// What `beedb bench tpcds` was asked for.
#[derive(Debug, Clone)]
pub struct Options {
    pub sf: f64,
    /// Query numbers (1..=99), in the order they run.
    pub queries: Vec<u32>,
    /// Per statement; `None`: no limit.
    pub timeout: Option<Duration>,
    /// Threads every engine may use for one query.
    pub threads: usize,
    /// The folder holding `schema.sql` and `queries/`.
    pub material: PathBuf,
}

/// The TPC-DS material: `$BEEDB_TPCDS_DIR`, else the first `shared/tpcds` found above
/// the current folder or this crate's source folder.
pub fn find_material() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("BEEDB_TPCDS_DIR") {
        let dir = PathBuf::from(dir);
        return if dir.join("queries").is_dir() && dir.join("schema.sql").is_file() {
            Ok(dir)
        } else {
            Err(format!("BEEDB_TPCDS_DIR={} has no schema.sql and queries/ folder", dir.display()))
        };
    }
    let starts = [std::env::current_dir().ok(), Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")))];
    for start in starts.into_iter().flatten() {
        for dir in start.ancestors() {
            let candidate = dir.join("shared/tpcds");
            if candidate.join("queries/q01.sql").is_file() && candidate.join("schema.sql").is_file() {
                return Ok(candidate);
            }
        }
    }
    Err("the TPC-DS queries (shared/tpcds) were not found above this folder; set BEEDB_TPCDS_DIR".into())
}

/// The query's text as the engines run it (PostgreSQL dialect), without its `;`.
pub fn query_text(material: &Path, number: u32) -> Result<String, String> {
    let path = material.join(format!("queries/q{number:02}.sql"));
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text.trim().trim_end_matches(';').trim_end().to_string())
}

/// The tables a query reads (a table name as a whole word of its text).
pub fn tables_of(sql: &str) -> Vec<&'static str> {
    let words: std::collections::HashSet<String> = sql
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map(|w| w.to_ascii_lowercase())
        .collect();
    TABLES.iter().copied().filter(|t| words.contains(*t)).collect()
}

/// The same query for SQLite: dates are text there, so `cast('2000-08-23' AS date)`
/// becomes the string; then TPC-H's rewrites (`substring … from … for`, date
/// literals). ROLLUP, window functions SQLite lacks and the like stay as they are:
/// SQLite reports them as its own errors.
pub fn sqlite_dialect(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let lower = sql.to_ascii_lowercase();
    let mut at = 0;
    while let Some(found) = lower[at..].find("cast") {
        let start = at + found;
        out.push_str(&sql[at..start]);
        let rest = &lower[start + 4..];
        let inner = rest.trim_start();
        let parsed = inner.strip_prefix("('").and_then(|t| {
            let end = t.find('\'')?;
            let literal = &t[..end];
            let tail = t[end + 1..].trim_start().strip_prefix("as")?.trim_start().strip_prefix("date")?;
            let tail = tail.trim_start().strip_prefix(')')?;
            Some((literal.len(), tail.len()))
        });
        let word_start = start == 0 || !lower.as_bytes()[start - 1].is_ascii_alphanumeric();
        match parsed {
            Some((literal_len, tail_len)) if word_start => {
                let literal_at = start + 4 + (rest.len() - inner.len()) + 2;
                out.push('\'');
                out.push_str(&sql[literal_at..literal_at + literal_len]);
                out.push('\'');
                at = sql.len() - tail_len;
            }
            _ => {
                out.push_str(&sql[start..start + 4]);
                at = start + 4;
            }
        }
    }
    out.push_str(&sql[at..]);
    tpch::sqlite_dialect(&out)
}

fn dialect(kind: EngineKind, sql: &str) -> String {
    if kind == EngineKind::Sqlite { sqlite_dialect(sql) } else { sql.to_string() }
}

// ---------------------------------------------------------------------------------
// How answers compare: rows in order only where the query's ORDER BY fixes it.

/// The query's top-level ORDER BY as output column positions (0-based), when every
/// key names an output column (by position, output name or the select item's own
/// text); `None` when the query has no top-level ORDER BY; `Some(None)` when it has
/// one whose keys could not all be placed (then rows compare strictly in order).
pub fn order_keys(sql: &str) -> Option<Option<Vec<usize>>> {
    let tokens = top_level(sql);
    let order_at = tokens.iter().rposition(|(d, w, _)| *d == 0 && w == "order")?;
    if tokens.get(order_at + 1).map(|(_, w, _)| w.as_str()) != Some("by") {
        return None;
    }
    let clause_start = tokens[order_at + 1].2 + 2;
    let clause_end = tokens[order_at..]
        .iter()
        .find(|(d, w, _)| *d == 0 && (w == "limit" || w == "offset" || w == "fetch"))
        .map_or(sql.len(), |(_, _, at)| *at);
    let select_list = select_list(sql, &tokens);
    let mut keys = Vec::new();
    for item in split_commas(&sql[clause_start..clause_end]) {
        let mut key = normalize(item);
        for suffix in [" nulls first", " nulls last", " asc", " desc"] {
            if let Some(k) = key.strip_suffix(suffix) {
                key = k.trim_end().to_string();
            }
        }
        let position = if let Ok(n) = key.parse::<usize>() {
            n.checked_sub(1)
        } else {
            select_list.as_ref().and_then(|list| {
                list.iter()
                    .position(|(name, _)| name.as_deref() == Some(unqualified(&key)))
                    .or_else(|| list.iter().position(|(_, text)| *text == key || unqualified(text) == unqualified(&key)))
            })
        };
        match position {
            Some(p) => keys.push(p),
            None => return Some(None),
        }
    }
    Some(Some(keys))
}

/// Whether the query ends in a LIMIT (ties at the cut may pick other rows).
fn has_limit(sql: &str) -> bool {
    top_level(sql).iter().any(|(d, w, _)| *d == 0 && w == "limit")
}

/// The words of `sql` outside string literals and comments, lowercased, with their
/// parenthesis depth and byte offset.
fn top_level(sql: &str) -> Vec<(usize, String, usize)> {
    let bytes = sql.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\'' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'\'' {
                i += 1;
            }
            i += 1;
        } else if c == b'-' && bytes.get(i + 1) == Some(&b'-') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if c == b'(' {
            depth += 1;
            i += 1;
        } else if c == b')' {
            depth = depth.saturating_sub(1);
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push((depth, sql[start..i].to_ascii_lowercase(), start));
        } else {
            i += 1;
        }
    }
    out
}

/// The outermost query's select list (its first top-level SELECT, whose names a
/// set operation's result takes): each item's output name, if it has one, and its
/// normalized text.
fn select_list(sql: &str, tokens: &[(usize, String, usize)]) -> Option<Vec<(Option<String>, String)>> {
    let select = tokens.iter().position(|(d, w, _)| *d == 0 && w == "select")?;
    let mut start = tokens[select].2 + "select".len();
    if let Some((_, w, at)) = tokens.get(select + 1)
        && (w == "distinct" || w == "all")
    {
        start = at + w.len();
    }
    let from = tokens[select..].iter().find(|(d, w, _)| *d == 0 && w == "from")?;
    let items = split_commas(&sql[start..from.2]);
    Some(
        items
            .into_iter()
            .map(|item| {
                let text = normalize(item);
                let words: Vec<&str> = text.split(' ').collect();
                // The depth of parentheses each word starts at: only a top-level AS
                // names the item (not `cast(x as decimal)`'s).
                let mut depth = 0i32;
                let depths: Vec<i32> = words
                    .iter()
                    .map(|w| {
                        let at = depth;
                        depth += w.matches('(').count() as i32 - w.matches(')').count() as i32;
                        at
                    })
                    .collect();
                let as_at = (0..words.len()).rev().find(|&i| words[i] == "as" && depths[i] == 0);
                let last = words.len() - 1;
                let plain = |w: &str| w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                let alias_at = if let Some(p) = as_at {
                    Some(p)
                } else if words.len() >= 2
                    && depths[last] == 0
                    && plain(words[last])
                    && !words[last - 1].ends_with(['+', '-', '*', '/', '|', '='])
                    && !["and", "or", "not", "then", "else", "when", "case", "distinct"].contains(&words[last - 1])
                {
                    Some(last)
                } else {
                    None
                };
                let name = match (as_at, alias_at) {
                    (Some(p), _) => words.get(p + 1).map(|w| w.trim_matches('"').to_string()),
                    (None, Some(p)) => Some(words[p].to_string()),
                    (None, None) if words.len() == 1 && words[0].chars().all(|c| plain(&c.to_string()) || c == '.') => {
                        Some(unqualified(words[0]).to_string())
                    }
                    _ => None,
                };
                // The item without its alias, and without parentheses around all of
                // it (`distinct(i_product_name)`).
                let mut text = alias_at.map_or(text.clone(), |p| words[..p].join(" "));
                while text.starts_with('(') && text.ends_with(')') && encloses(&text) {
                    text = text[1..text.len() - 1].to_string();
                }
                (name, text)
            })
            .collect(),
    )
}

/// Whether the parenthesis that opens `text` is the one that closes it.
fn encloses(text: &str) -> bool {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return i == text.len() - 1;
                }
            }
            _ => {}
        }
    }
    false
}

/// `text` split at commas outside parentheses and string literals.
fn split_commas(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut quoted, mut start) = (0i32, false, 0);
    for (i, c) in text.char_indices() {
        match c {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter().map(str::trim).filter(|p| !p.is_empty()).collect()
}

/// Lowercased, whitespace collapsed, no blanks inside parentheses.
fn normalize(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_lowercase();
    collapsed.replace("( ", "(").replace(" )", ")")
}

fn unqualified(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// `None` if `actual` is the reference's answer, else the first difference. Rows
/// compare as multisets, and in order where `order` (the ORDER BY keys) says: with
/// known keys, the keys must come in the reference's order and rows tied on them
/// may come in any order (and, at a LIMIT's cut, be other tied rows); with unknown
/// keys, rows compare strictly in order.
pub fn compare(expected: &[Vec<Cell>], actual: &[Vec<Cell>], order: &Option<Option<Vec<usize>>>, limited: bool) -> Option<String> {
    let keys = match order {
        None => return tpch::compare_answers(expected, actual, false),
        Some(None) => return tpch::compare_answers(expected, actual, true),
        Some(Some(keys)) => keys,
    };
    if expected.len() != actual.len() {
        return Some(format!("{} rows instead of {}", actual.len(), expected.len()));
    }
    let key_of = |row: &[Cell]| -> Vec<Cell> { keys.iter().map(|k| row.get(*k).cloned().unwrap_or(Cell::Null)).collect() };
    let key_rows = |rows: &[Vec<Cell>]| -> Vec<Vec<Cell>> { rows.iter().map(|r| key_of(r)).collect() };
    if let Some(d) = tpch::compare_answers(&key_rows(expected), &key_rows(actual), true) {
        let same_rows = tpch::compare_answers(expected, actual, false).is_none();
        return Some(format!("ORDER BY keys differ: {d}{}", if same_rows { " (the same rows in another order)" } else { "" }));
    }
    // Groups of rows tied on the keys, by the reference's boundaries.
    let mut start = 0;
    while start < expected.len() {
        let mut end = start + 1;
        while end < expected.len() && tpch::compare_answers(&[key_of(&expected[start])], &[key_of(&expected[end])], true).is_none() {
            end += 1;
        }
        let at_cut = limited && end == expected.len();
        if !at_cut && let Some(d) = tpch::compare_answers(&expected[start..end], &actual[start..end], false) {
            return Some(format!("rows {}–{} (tied on the ORDER BY keys): {d}", start + 1, end));
        }
        start = end;
    }
    None
}

// ---------------------------------------------------------------------------------
// Data.

/// `tpcgen-cli` if it is installed where the lab looks without installing anything:
/// `$BEEDB_TPCGEN`, the PATH, or the scripts folder of `$BEEDB_LAB_PYTHON` (default
/// `python3`), where `scripts/install-peers` puts it.
pub fn installed_generator() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("BEEDB_TPCGEN") {
        return Some(PathBuf::from(path));
    }
    let works = |program: &Path| {
        Command::new(program)
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if works(Path::new("tpcgen-cli")) {
        return Some(PathBuf::from("tpcgen-cli"));
    }
    let python = std::env::var_os("BEEDB_LAB_PYTHON").unwrap_or_else(|| "python3".into());
    let script = "import os, sysconfig\n\
                  for scheme in (sysconfig.get_default_scheme(), sysconfig.get_preferred_scheme('user')):\n    \
                  print(sysconfig.get_path('scripts', scheme))";
    let output = Command::new(python).args(["-c", script]).stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|dir| Path::new(dir.trim()).join("tpcgen-cli"))
        .find(|p| p.is_file() && works(p))
}

/// `tpcgen-cli`: one already installed, else the one in the lab's virtual
/// environment under `--out`, installed there from PyPI the first time.
fn generator(ctx: &Ctx) -> Result<PathBuf, String> {
    if let Some(found) = installed_generator() {
        return Ok(found);
    }
    let python = crate::workload::python::venv_python(ctx)?;
    let program = python.with_file_name("tpcgen-cli");
    if !program.is_file() {
        ctx.progress.note(&format!("installing tpcgen-cli into {}", ctx.work.join("python-venv").display()));
        crate::workload::python::pip_install(&python, "tpcgen-cli")?;
    }
    Ok(program)
}

/// The folder of converted `.tbl` files for `sf`, with the rows of each of `tables`.
/// A table is generated and converted once per scale factor: its `.tbl` is written
/// through a temporary file and its row count (`.rows`) after it, so a table whose
/// `.rows` exists is complete. Only the tables missing are generated.
fn ensure_data(ctx: &Ctx, sf: f64, tables: &[&str]) -> Result<(PathBuf, Vec<(String, u64)>), String> {
    let dir = ctx.data.join(format!("tpcds-sf{sf}"));
    let rows_of = |table: &str| -> Option<u64> {
        std::fs::read_to_string(dir.join(format!("{table}.rows"))).ok()?.trim().parse().ok()
    };
    let missing: Vec<&str> = tables.iter().copied().filter(|t| rows_of(t).is_none()).collect();
    if !missing.is_empty() {
        let program = generator(ctx)?;
        let raw = dir.join("dat");
        std::fs::create_dir_all(&raw).map_err(|e| format!("creating {}: {e}", raw.display()))?;
        let bar = ctx.progress.phase(format!("generating TPC-DS SF {sf}: {} tables (tpcgen-cli)", missing.len()), 0);
        let output = Command::new(&program)
            .args(["tpcds", "dat", "--quiet", "--overwrite", "--no-progress", "-s", &sf.to_string(), "--tables", &missing.join(",")])
            .arg("--output-dir")
            .arg(&raw)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
        bar.finish_and_clear();
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(format!("{} tpcds dat -s {sf} failed ({}): {}", program.display(), output.status, stderr.trim()));
        }
        let bar = ctx.progress.phase(format!("converting TPC-DS SF {sf} for bulk load"), missing.len() as u64);
        for table in &missing {
            bar.set_message(format!("converting TPC-DS SF {sf}: {table}"));
            let dat = raw.join(format!("{table}.dat"));
            let n = convert(&dat, &dir.join(format!("{table}.tbl"))).map_err(|e| format!("converting {}: {e}", dat.display()))?;
            std::fs::write(dir.join(format!("{table}.rows")), format!("{n}\n")).map_err(|e| format!("writing {table}.rows: {e}"))?;
            let _ = std::fs::remove_file(&dat);
            bar.inc(1);
        }
        bar.finish_and_clear();
        let _ = std::fs::remove_dir(&raw);
    }
    let rows = tables.iter().map(|t| (t.to_string(), rows_of(t).unwrap_or(0))).collect();
    Ok((dir, rows))
}

/// Rewrites one dsdgen `.dat` file into the lab's bulk format: the trailing `|`
/// dropped, an empty field written `\N` (NULL). Returns the rows.
pub fn convert(from: &Path, to: &Path) -> std::io::Result<u64> {
    let reader = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(from)?);
    let temporary = to.with_extension("tmp");
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&temporary)?);
    let mut rows = 0u64;
    let mut line = Vec::new();
    let mut reader = reader;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let mut fields: &[u8] = &line;
        while let Some((b'\n' | b'\r', rest)) = fields.split_last() {
            fields = rest;
        }
        let fields = fields.strip_suffix(b"|").unwrap_or(fields);
        for (i, field) in fields.split(|b| *b == b'|').enumerate() {
            if i > 0 {
                out.write_all(b"|")?;
            }
            out.write_all(if field.is_empty() { b"\\N" } else { field })?;
        }
        out.write_all(b"\n")?;
        rows += 1;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    std::fs::rename(&temporary, to)?;
    Ok(rows)
}

// ---------------------------------------------------------------------------------
// The run.

/// How one query ended on one engine.
#[derive(Debug, Clone)]
enum Status {
    Ok,
    Wrong(String),
    Error(String),
    Timeout,
    /// No reference to compare with (DuckDB did not answer or does not take part).
    Unverified,
}

impl Status {
    fn label(&self) -> String {
        match self {
            Status::Ok => "ok".into(),
            Status::Wrong(_) => "wrong answer".into(),
            Status::Error(e) => format!("error: {e}"),
            Status::Timeout => "timeout".into(),
            Status::Unverified => "unverified".into(),
        }
    }
}

/// The first line of an error message, clipped.
fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or("").trim();
    if line.chars().count() > 90 { format!("{}…", line.chars().take(90).collect::<String>()) } else { line.to_string() }
}

pub fn run(ctx: &mut Ctx, options: &Options) -> Report {
    let sf = options.sf;
    let mut results = Vec::new();
    let mut queries = Vec::new();
    for &n in &options.queries {
        match query_text(&options.material, n) {
            Ok(sql) => queries.push((n, sql)),
            Err(e) => ctx.fail(format!("q{n}: {e}")),
        }
    }
    let schema_path = options.material.join("schema.sql");
    let schema = match std::fs::read_to_string(&schema_path) {
        Ok(s) => s,
        Err(e) => {
            ctx.fail(format!("{}: {e}", schema_path.display()));
            return report(ctx, options, results, Vec::new());
        }
    };
    // Only the tables the chosen queries read are made and loaded (all 24 for all 99).
    let mut needed: Vec<&str> = Vec::new();
    for (_, sql) in &queries {
        needed.extend(tables_of(sql));
    }
    let tables: Vec<&str> = TABLES.iter().copied().filter(|t| needed.contains(t)).collect();
    let (data, rows) = match ensure_data(ctx, sf, &tables) {
        Ok(d) => d,
        Err(e) => {
            ctx.fail(format!("generating TPC-DS data: {e}"));
            return report(ctx, options, results, Vec::new());
        }
    };
    let total_rows: u64 = rows.iter().filter(|(t, _)| tables.contains(&t.as_str())).map(|(_, n)| n).sum();

    // The reference engine runs first, so every other answer is compared as it comes.
    let mut opened = ctx.open_all(&format!("tpcds-sf{sf}"));
    opened.sort_by_key(|o| o.kind != EngineKind::Duckdb);
    let mut engines = Vec::new();
    for Open { kind, mut engine } in opened {
        let bar = ctx.progress.phase(format!("loading TPC-DS SF {sf} into {kind} ({} tables, {total_rows} rows)", tables.len()), tables.len() as u64);
        let loaded = (|| -> Result<f64, LabError> {
            engine.batch(&schema)?;
            let start = Instant::now();
            for table in &tables {
                bar.set_message(format!("loading TPC-DS SF {sf} into {kind}: {table}"));
                let loaded = engine.bulk_load(table, &data.join(format!("{table}.tbl")))?;
                let expected = rows.iter().find(|(t, _)| t == table).map_or(0, |(_, n)| *n);
                // SQLite's adapter and DuckDB's report what they inserted; check BeeDB's too.
                if loaded != expected && loaded != 0 {
                    return Err(LabError::new(format!("{table}: loaded {loaded} rows of {expected}")));
                }
                bar.inc(1);
            }
            Ok(start.elapsed().as_secs_f64())
        })();
        bar.finish_and_clear();
        let seconds = match loaded {
            Ok(s) => s,
            Err(e) => {
                ctx.fail(format!("tpcds: loading into {kind}: {e}"));
                continue;
            }
        };
        let mut set_up = || -> Result<Vec<String>, LabError> {
            let mut notes = vec![format!("{kind}: loaded {} tables ({total_rows} rows) in {seconds:.1} s", tables.len())];
            if let Err(e) = engine.run("ANALYZE", &[]) {
                notes.push(format!("{kind}: ANALYZE: {}", first_line(&e.message)));
            }
            match kind {
                EngineKind::Postgres => {
                    engine.run("SET jit = off", &[])?;
                }
                // PostgreSQL's semantics, which BeeDB follows: NULLs sort last
                // ascending and first descending, and integer / integer truncates.
                EngineKind::Duckdb => {
                    engine.run("SET default_null_order = 'nulls_last_on_asc_first_on_desc'", &[])?;
                    engine.run("SET integer_division = true", &[])?;
                    notes.push("duckdb: PostgreSQL's NULL order and integer division (default_null_order, integer_division)".into());
                }
                _ => {}
            }
            notes.push(engine.set_threads(options.threads)?);
            engine.set_statement_timeout(options.timeout)?;
            Ok(notes)
        };
        match set_up() {
            Ok(notes) => {
                for n in notes {
                    ctx.note(n);
                }
                engines.push(Open { kind, engine });
            }
            Err(e) => ctx.fail(format!("tpcds: setting up {kind}: {e}")),
        }
    }

    let runs = ctx.runs.max(1);
    let has_reference = engines.iter().any(|o| o.kind == EngineKind::Duckdb);
    if !has_reference {
        ctx.note("duckdb does not take part: answers are compared with the first engine's only");
    }
    let mut statuses: Vec<(u32, Vec<(EngineKind, Status, Option<f64>)>)> = Vec::new();
    let bar = ctx.progress.phase(format!("TPC-DS SF {sf}: {} queries", queries.len()), (queries.len() * engines.len()) as u64);
    for (n, sql) in &queries {
        let item = format!("q{n}");
        let order = order_keys(sql);
        let limited = has_limit(sql);
        let mut reference: Option<(EngineKind, Vec<Vec<Cell>>)> = None;
        let mut row = Vec::new();
        for open in engines.iter_mut() {
            let kind = open.kind;
            bar.set_message(format!("{item} on {kind}"));
            let text = dialect(kind, sql);
            let mut times = Vec::new();
            let mut status = Status::Ok;
            for run in 0..=runs {
                let outcome = match open.engine.run(&text, &[]) {
                    Ok(o) => o,
                    Err(e) if e.timed_out => {
                        status = Status::Timeout;
                        break;
                    }
                    Err(e) => {
                        status = Status::Error(first_line(&e.message));
                        break;
                    }
                };
                if run > 0 {
                    times.push(outcome.elapsed.as_secs_f64() * 1e3);
                }
                match &reference {
                    None if run == 0 => {
                        if has_reference && kind != EngineKind::Duckdb {
                            status = Status::Unverified;
                        }
                        reference = Some((kind, outcome.rows));
                    }
                    None => {}
                    Some((_, expected)) => {
                        if matches!(status, Status::Ok)
                            && let Some(d) = compare(expected, &outcome.rows, &order, limited)
                        {
                            status = Status::Wrong(format!("run {run}: {d}"));
                        }
                    }
                }
            }
            bar.inc(1);
            let time = (!times.is_empty()).then(|| verify::median(&times));
            let ref_kind = reference.as_ref().map(|(k, _)| *k);
            match &status {
                Status::Ok | Status::Unverified => {}
                Status::Wrong(d) => ctx.fail(format!("{item} on {kind}: answer differs from {}'s: {d}", ref_kind.map_or("the reference", EngineKind::name))),
                Status::Error(e) => ctx.fail(format!("{item} on {kind}: {e}")),
                Status::Timeout => {
                    let limit = options.timeout.map(|t| t.as_secs_f64()).unwrap_or(0.0);
                    ctx.fail(format!("{item} on {kind}: timed out (over {limit} s), no answer"));
                }
            }
            ctx.progress.note(&format!(
                "{item} on {kind}: {}{}",
                status.label(),
                time.map_or(String::new(), |t| format!(", {t:.1} ms"))
            ));
            if time.is_some() || matches!(status, Status::Timeout) {
                let timed_out = matches!(status, Status::Timeout);
                results.push(Measurement {
                    item: item.clone(),
                    engine: kind.name().to_string(),
                    value: time.unwrap_or(f64::NAN),
                    unit: "ms".into(),
                    verified: matches!(status, Status::Ok),
                    timed_out,
                    runs: times,
                });
            }
            row.push((kind, status, time));
        }
        statuses.push((*n, row));
    }
    bar.finish_and_clear();
    let sections = summary(&engines.iter().map(|o| o.kind).collect::<Vec<_>>(), &statuses);
    let mut r = report(ctx, options, results, sections);
    r.notes.push(
        "status per query in the section below; ÷duckdb: the engine's median time ÷ DuckDB's (above 1, DuckDB is faster)".into(),
    );
    r
}

/// The per-query status table (status, median ms and ratio to DuckDB per engine),
/// the counts per engine and the geometric mean over the queries every engine
/// answered correctly.
fn summary(kinds: &[EngineKind], statuses: &[(u32, Vec<(EngineKind, Status, Option<f64>)>)]) -> Vec<Section> {
    let reference = kinds.contains(&EngineKind::Duckdb).then_some(EngineKind::Duckdb);
    let mut header = vec!["query".to_string()];
    for k in kinds {
        header.push(format!("{k}"));
        header.push(format!("{k} ms"));
        if reference.is_some() && *k != EngineKind::Duckdb {
            header.push(format!("{k}÷duckdb"));
        }
    }
    let mut rows = Vec::new();
    let mut all_ok: Vec<&Vec<(EngineKind, Status, Option<f64>)>> = Vec::new();
    for (n, row) in statuses {
        let reference_time = row.iter().find(|(k, _, _)| Some(*k) == reference).and_then(|(_, _, t)| *t);
        let mut line = vec![format!("q{n}")];
        for (kind, status, time) in row {
            line.push(status.label());
            line.push(time.map_or("-".into(), |t| crate::report::format_value(t, "ms")));
            if reference.is_some() && *kind != EngineKind::Duckdb {
                line.push(match (time, reference_time) {
                    (Some(t), Some(r)) if r > 0.0 => format!("{:.2}", t / r),
                    _ => "-".into(),
                });
            }
        }
        rows.push(line);
        if row.len() == kinds.len() && row.iter().all(|(_, s, t)| matches!(s, Status::Ok) && t.is_some()) {
            all_ok.push(row);
        }
    }
    let mut counts = Vec::new();
    for (i, k) in kinds.iter().enumerate() {
        let count = |f: &dyn Fn(&Status) -> bool| statuses.iter().filter(|(_, r)| r.get(i).is_some_and(|(_, s, _)| f(s))).count();
        counts.push(vec![
            k.to_string(),
            count(&|s| matches!(s, Status::Ok)).to_string(),
            count(&|s| matches!(s, Status::Wrong(_))).to_string(),
            count(&|s| matches!(s, Status::Error(_))).to_string(),
            count(&|s| matches!(s, Status::Timeout)).to_string(),
            geomean(all_ok.iter().filter_map(|r| r.get(i).and_then(|(_, _, t)| *t))).map_or("-".into(), |g| format!("{g:.2}")),
            match reference {
                Some(_) if *k != EngineKind::Duckdb => {
                    let j = kinds.iter().position(|x| *x == EngineKind::Duckdb).expect("reference");
                    geomean(all_ok.iter().filter_map(|r| Some(r.get(i)?.2? / r.get(j)?.2?)))
                        .map_or("-".into(), |g| format!("{g:.2}"))
                }
                _ => "-".into(),
            },
        ]);
    }
    vec![
        Section { title: "status per query (ms: median of the measured runs)".into(), header, rows },
        Section {
            title: format!("counts, and the geometric mean over the {} queries every engine answered correctly", all_ok.len()),
            header: ["engine", "ok", "wrong answer", "error", "timeout", "geomean ms", "geomean ÷duckdb"]
                .map(String::from)
                .to_vec(),
            rows: counts,
        },
    ]
}

fn geomean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values.filter(|v| *v > 0.0) {
        sum += v.ln();
        n += 1;
    }
    (n > 0).then(|| (sum / n as f64).exp())
}

fn report(ctx: &Ctx, options: &Options, results: Vec<Measurement>, sections: Vec<Section>) -> Report {
    let items = options.queries.iter().map(|n| (format!("q{n}"), String::new())).collect();
    let timeout = options.timeout.map_or("none".to_string(), |t| format!("{}s", t.as_secs_f64()));
    let mut r = ctx.report(
        "tpcds",
        vec![
            ("sf".into(), options.sf.to_string()),
            ("threads".into(), options.threads.to_string()),
            ("timeout".into(), timeout),
            ("runs".into(), ctx.runs.max(1).to_string()),
        ],
        items,
        results,
    );
    r.sections = sections;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dat_lines_lose_the_trailing_bar_and_empty_fields_become_null() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("t.dat");
        std::fs::write(&from, "1|AAA|1997-03-13||x y |\n2||||\n").unwrap();
        let to = dir.path().join("t.tbl");
        assert_eq!(convert(&from, &to).unwrap(), 2);
        assert_eq!(std::fs::read_to_string(&to).unwrap(), "1|AAA|1997-03-13|\\N|x y \n2|\\N|\\N|\\N\n");
    }

    #[test]
    fn sqlite_dates_are_text() {
        assert_eq!(
            sqlite_dialect("d_date BETWEEN cast('2000-08-23' AS date) AND CAST ('2000-09-06' AS date) and broadcast(x)"),
            "d_date BETWEEN '2000-08-23' AND '2000-09-06' and broadcast(x)"
        );
        assert_eq!(sqlite_dialect("select cast(x as integer)"), "select cast(x as integer)");
    }

    #[test]
    fn order_by_keys_are_found_in_the_select_list() {
        let sql = "with a as (select x from t order by x) select i_item_id, sum(p) as total, c.name n, 3 \
                   from a order by total desc, i_item_id, n nulls first, 4 limit 100";
        assert_eq!(order_keys(sql), Some(Some(vec![1, 0, 2, 3])));
        assert!(has_limit(sql));
        assert_eq!(order_keys("select a from t union all select b from u order by a"), Some(Some(vec![0])));
        assert_eq!(order_keys("select a from t order by b"), Some(None));
        assert_eq!(order_keys("select a, count(*) from (select a from t order by a) s group by a"), None);
        assert_eq!(order_keys("select sum(x) from t order by sum(x)"), Some(Some(vec![0])));
        // A key may name the column under its alias, qualified or not.
        let sql = "select i_brand_id brand_id, a.ca_state state, sum(x) total from t order by sum(x) desc, ca_state, i_brand_id";
        assert_eq!(order_keys(sql), Some(Some(vec![2, 1, 0])));
        assert_eq!(order_keys("select distinct(i_product_name) from t order by i_product_name"), Some(Some(vec![0])));
        let sql = "select case when b = 0 then null else cast(a as decimal(15,4)) / b end ratio from t order by ratio";
        assert_eq!(order_keys(sql), Some(Some(vec![0])));
        assert_eq!(order_keys("select (a) + (b) from t order by 1"), Some(Some(vec![0])));
    }

    #[test]
    fn ties_on_the_order_by_keys_may_come_in_any_order() {
        let row = |k: i64, v: &str| vec![Cell::Int(k), Cell::Text(v.into())];
        let expected = vec![row(1, "a"), row(1, "b"), row(2, "c"), row(3, "d"), row(3, "e")];
        let keys = Some(Some(vec![0]));
        let swapped = vec![row(1, "b"), row(1, "a"), row(2, "c"), row(3, "d"), row(3, "e")];
        assert_eq!(compare(&expected, &swapped, &keys, false), None);
        assert!(compare(&expected, &swapped, &Some(None), false).is_some(), "unknown keys: strictly in order");
        let misordered = vec![row(2, "c"), row(1, "a"), row(1, "b"), row(3, "d"), row(3, "e")];
        assert!(compare(&expected, &misordered, &keys, false).unwrap().contains("another order"));
        // At a LIMIT's cut, another row tied on the keys may take the last place.
        let other_tie = vec![row(1, "a"), row(1, "b"), row(2, "c"), row(3, "d"), row(3, "z")];
        assert_eq!(compare(&expected, &other_tie, &keys, true), None);
        assert!(compare(&expected, &other_tie, &keys, false).is_some());
        assert_eq!(compare(&expected, &swapped, &None, false), None);
    }

    #[test]
    fn every_query_reads_and_names_its_tables() {
        let Ok(material) = find_material() else {
            return;
        };
        for n in 1..=99 {
            let sql = query_text(&material, n).unwrap();
            assert!(!sql.ends_with(';'), "q{n}");
            assert!(!tables_of(&sql).is_empty(), "q{n}");
        }
        let schema = std::fs::read_to_string(material.join("schema.sql")).unwrap();
        for t in TABLES {
            assert!(schema.contains(&format!("CREATE TABLE {t}(")), "{t}");
        }
    }
}
