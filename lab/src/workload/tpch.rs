//! TPC-H: the 22 queries of `shared/tpch/queries` on data from `tpchgen` at a scale
//! factor, loaded into every engine; median milliseconds per query, every answer
//! compared across engines and, at SF 0.01 and 0.1, with the known answers of
//! `shared/tpch/answers` (the comparison rules of `shared/tpch/README.md`).
//!
//! Each query runs once as a warm-up and then `--runs` times. A statement timeout
//! (the engine's own cancel, see [`Engine::set_statement_timeout`]) stops a query
//! that runs too long: it is reported as `timeout`, its other runs are skipped, and
//! the run fails, since no answer was given.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::bench::{Ctx, Open};
use crate::engine::{Cell, Engine, EngineKind, LabError};
use crate::report::{Measurement, Report};
use crate::tpch_data::{self, TABLE_NAMES};
use crate::verify;

/// What `beedb bench tpch` was asked for.
#[derive(Debug, Clone)]
pub struct Options {
    pub sf: f64,
    /// Query numbers (1..=22), in the order they run.
    pub queries: Vec<u32>,
    /// Per statement; `None`: no limit.
    pub timeout: Option<Duration>,
    /// Threads every engine may use for one query.
    pub threads: usize,
    /// The folder holding `queries/` and `answers/`.
    pub material: PathBuf,
}

/// The TPC-H material: `$BEEDB_TPCH_DIR`, else the first `shared/tpch` found above
/// the current folder or this crate's source folder.
pub fn find_material() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("BEEDB_TPCH_DIR") {
        let dir = PathBuf::from(dir);
        return if dir.join("queries").is_dir() {
            Ok(dir)
        } else {
            Err(format!("BEEDB_TPCH_DIR={} has no queries/ folder", dir.display()))
        };
    }
    let starts = [std::env::current_dir().ok(), Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")))];
    for start in starts.into_iter().flatten() {
        for dir in start.ancestors() {
            let candidate = dir.join("shared/tpch");
            if candidate.join("queries/q01.sql").is_file() {
                return Ok(candidate);
            }
        }
    }
    Err("the TPC-H queries (shared/tpch) were not found above this folder; set BEEDB_TPCH_DIR".into())
}

/// The query's text as the engines run it (PostgreSQL dialect): Q11's fraction is
/// 0.0001 / SF, as the specification says; no trailing `;`.
pub fn query_text(material: &Path, number: u32, sf: f64) -> Result<String, String> {
    let path = material.join(format!("queries/q{number:02}.sql"));
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut text = text.trim().trim_end_matches(';').trim_end().to_string();
    if number == 11 {
        let spec = "0.0001000000";
        if !text.contains(spec) {
            return Err(format!("{}: Q11's fraction {spec} not found", path.display()));
        }
        text = text.replace(spec, &format!("{:.10}", 0.0001 / sf));
    }
    Ok(text)
}

/// The same query in SQLite's dialect: dates are text (`'1998-12-01'`), date
/// arithmetic is `date('1998-12-01', '-90 days')`, `extract(year from x)` is
/// `strftime`, `substring(x from a for b)` is `substr(x, a, b)`. Only the forms the
/// 22 queries use are rewritten.
pub fn sqlite_dialect(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql;
    while !rest.is_empty() {
        // A string literal is copied as it is ('' is a quote inside it).
        if let Some(after) = rest.strip_prefix('\'') {
            let mut end = 0;
            let bytes = after.as_bytes();
            while end < bytes.len() {
                if bytes[end] == b'\'' {
                    if bytes.get(end + 1) == Some(&b'\'') {
                        end += 2;
                        continue;
                    }
                    break;
                }
                end += 1;
            }
            let end = (end + 1).min(after.len());
            out.push('\'');
            out.push_str(&after[..end]);
            rest = &after[end..];
            continue;
        }
        let at_word_start = !out.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if !at_word_start {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if let Some(after) = rest.strip_prefix("date '") {
            if let Some(end) = after.find('\'') {
                let literal = &after[..end];
                let tail = &after[end + 1..];
                if let Some((modifier, tail)) = interval_after(tail) {
                    out.push_str(&format!("date('{literal}', '{modifier}')"));
                    rest = tail;
                } else {
                    out.push_str(&format!("'{literal}'"));
                    rest = tail;
                }
                continue;
            }
        }
        if let Some(after) = rest.strip_prefix("extract(year from ") {
            if let Some(end) = after.find(')') {
                out.push_str(&format!("cast(strftime('%Y', {}) as integer)", after[..end].trim()));
                rest = &after[end + 1..];
                continue;
            }
        }
        if let Some(after) = rest.strip_prefix("substring(") {
            if let Some(end) = after.find(')') {
                let inner = &after[..end];
                if let Some((value, bounds)) = inner.split_once(" from ") {
                    let (from, length) = bounds.split_once(" for ").unwrap_or((bounds, ""));
                    let length = if length.is_empty() { String::new() } else { format!(", {}", length.trim()) };
                    out.push_str(&format!("substr({}, {}{length})", value.trim(), from.trim()));
                    rest = &after[end + 1..];
                    continue;
                }
            }
        }
        let c = rest.chars().next().expect("not empty");
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// ` + interval '3' month` at the start of `text`: SQLite's modifier (`+3 months`)
/// and what follows.
fn interval_after(text: &str) -> Option<(String, &str)> {
    let t = text.trim_start();
    let sign = t.chars().next().filter(|c| *c == '+' || *c == '-')?;
    let t = t[1..].trim_start().strip_prefix("interval '")?;
    let end = t.find('\'')?;
    let amount: i64 = t[..end].trim().parse().ok()?;
    let t = t[end + 1..].trim_start();
    let word_end = t.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(t.len());
    let unit = match &t[..word_end] {
        "day" | "days" => "days",
        "month" | "months" => "months",
        "year" | "years" => "years",
        _ => return None,
    };
    Some((format!("{sign}{amount} {unit}"), &t[word_end..]))
}

/// The query's text for `kind`.
fn dialect(kind: EngineKind, sql: &str) -> String {
    if kind == EngineKind::Sqlite { sqlite_dialect(sql) } else { sql.to_string() }
}

/// A known answer (`answers/sfX/qNN.csv`: `|`-separated, a header row, CRLF).
#[derive(Debug, Clone)]
pub struct KnownAnswer {
    pub columns: usize,
    pub rows: Vec<Vec<String>>,
}

/// The known answer for `sf`, if the material has answers at that scale.
pub fn known_answer(material: &Path, number: u32, sf: f64) -> Option<KnownAnswer> {
    let path = material.join(format!("answers/sf{sf}/q{number:02}.csv"));
    let text = std::fs::read_to_string(path).ok()?;
    Some(parse_answer(&text))
}

pub fn parse_answer(text: &str) -> KnownAnswer {
    let mut lines = text.lines().map(|l| l.trim_end_matches('\r'));
    let split = |line: &str| line.split('|').map(unquote).collect::<Vec<_>>();
    let columns = lines.next().map(|h| split(h).len()).unwrap_or(0);
    let rows = lines.filter(|l| !l.is_empty()).map(split).collect();
    KnownAnswer { columns, rows }
}

/// A CSV-quoted cell as its text (`""` is NULL, written as the empty string).
fn unquote(cell: &str) -> String {
    match cell.strip_prefix('"').and_then(|c| c.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => cell.to_string(),
    }
}

/// TPC-H's tolerance: 0.01 absolute or 1e-6 relative (the answers round to 2 decimals).
/// "Within 0.01" includes 0.01 itself as decimals see it: 1.03 − 1.02 in binary is
/// 0.010000000000000009 (two engines rounding a half differently, as DuckDB's double
/// division and PostgreSQL's numeric do for TPC-DS Q78).
fn close(x: f64, y: f64) -> bool {
    let d = (x - y).abs();
    d <= 0.01 + 1e-9 || d <= 1e-6 * x.abs().max(y.abs())
}

fn number(c: &Cell) -> Option<f64> {
    match c {
        Cell::Int(v) => Some(*v as f64),
        Cell::Float(v) => Some(*v),
        Cell::Text(s) => s.trim().parse().ok(),
        Cell::Null => None,
    }
}

/// Two engines' cells: numbers within TPC-H's tolerance, text after trimming blanks.
fn same(a: &Cell, b: &Cell) -> bool {
    match (a, b) {
        (Cell::Null, Cell::Null) => true,
        (Cell::Text(x), Cell::Text(y)) if x.trim_end() == y.trim_end() => true,
        (Cell::Null, _) | (_, Cell::Null) => false,
        _ => matches!((number(a), number(b)), (Some(x), Some(y)) if close(x, y)),
    }
}

/// An engine's cell against the known answer's text.
fn matches_known(expected: &str, actual: &Cell) -> bool {
    let expected = expected.trim_end();
    match actual {
        Cell::Null => expected.is_empty(),
        Cell::Text(s) if s.trim_end() == expected => true,
        _ => matches!((expected.parse::<f64>(), number(actual)), (Ok(x), Some(y)) if close(x, y)),
    }
}

fn show(row: &[Cell]) -> String {
    let cells: Vec<String> = row.iter().map(|c| c.to_string()).collect();
    let text = format!("({})", cells.join(", "));
    if text.len() > 160 { format!("{}…", &text[..text.floor_char_boundary(160)]) } else { text }
}

/// `None` if `actual` is `expected` (rows in order when `ordered`, else as sorted
/// multisets), else the first difference.
pub fn compare_answers(expected: &[Vec<Cell>], actual: &[Vec<Cell>], ordered: bool) -> Option<String> {
    if expected.len() != actual.len() {
        return Some(format!("{} rows instead of {}", actual.len(), expected.len()));
    }
    let (e, a);
    let (expected, actual) = if ordered {
        (expected, actual)
    } else {
        e = verify::canonical(expected.to_vec());
        a = verify::canonical(actual.to_vec());
        (&e[..], &a[..])
    };
    for (i, (x, y)) in expected.iter().zip(actual).enumerate() {
        if x.len() != y.len() || x.iter().zip(y).any(|(p, q)| !same(p, q)) {
            let order = if ordered && compare_answers(expected, actual, false).is_none() {
                " (the same rows in another order)"
            } else {
                ""
            };
            return Some(format!("row {}: {} instead of {}{order}", i + 1, show(y), show(x)));
        }
    }
    None
}

/// `None` if `actual` is the known answer, else the first difference.
pub fn compare_known(known: &KnownAnswer, actual: &[Vec<Cell>], ordered: bool) -> Option<String> {
    if actual.len() != known.rows.len() {
        return Some(format!("{} rows instead of the known answer's {}", actual.len(), known.rows.len()));
    }
    if let Some(row) = actual.iter().find(|r| r.len() != known.columns) {
        return Some(format!("{} columns instead of {}: {}", row.len(), known.columns, show(row)));
    }
    let row_matches = |e: &[String], a: &[Cell]| e.len() == a.len() && e.iter().zip(a).all(|(x, y)| matches_known(x, y));
    if ordered {
        for (i, (e, a)) in known.rows.iter().zip(actual).enumerate() {
            if !row_matches(e, a) {
                return Some(format!("row {}: {} instead of the known ({})", i + 1, show(a), e.join(", ")));
            }
        }
    } else {
        let mut unused: Vec<&Vec<Cell>> = actual.iter().collect();
        for e in &known.rows {
            match unused.iter().position(|a| row_matches(e, a)) {
                Some(i) => {
                    unused.swap_remove(i);
                }
                None => return Some(format!("the known row ({}) is missing", e.join(", "))),
            }
        }
    }
    None
}

fn has_order_by(sql: &str) -> bool {
    sql.to_ascii_lowercase().contains("order by")
}

/// Loads the schema and the eight tables into `engine` and gathers statistics where
/// the engine has `ANALYZE`; returns the seconds the tables took to load.
fn load(engine: &mut dyn Engine, data: &Path, on_table: &mut dyn FnMut(&str)) -> Result<f64, LabError> {
    engine.batch(tpch_data::SCHEMA)?;
    let start = Instant::now();
    for table in TABLE_NAMES {
        on_table(table);
        engine.bulk_load(table, &data.join(format!("{table}.tbl")))?;
    }
    Ok(start.elapsed().as_secs_f64())
}

pub fn run(ctx: &mut Ctx, options: &Options) -> Report {
    let sf = options.sf;
    let mut results = Vec::new();
    let mut profiles = Vec::new();
    let dir = ctx.data.join(format!("tpch-sf{sf}"));
    let bar = ctx.progress.phase(format!("generating TPC-H SF {sf}"), TABLE_NAMES.len() as u64);
    let data = tpch_data::ensure_data_with(&dir, sf, |_| bar.inc(1));
    bar.finish_and_clear();
    let data = match data {
        Ok(d) => d,
        Err(e) => {
            ctx.fail(format!("generating TPC-H data: {e}"));
            return report(ctx, options, results, profiles);
        }
    };
    let mut queries = Vec::new();
    for &n in &options.queries {
        match query_text(&options.material, n, sf) {
            Ok(sql) => queries.push((n, sql)),
            Err(e) => ctx.fail(format!("q{n}: {e}")),
        }
    }

    // Every engine loads the same files, then gets the same settings.
    let mut engines = Vec::new();
    for Open { kind, mut engine } in ctx.open_all(&format!("tpch-sf{sf}")) {
        let bar = ctx.progress.phase(format!("loading TPC-H SF {sf} into {kind}"), TABLE_NAMES.len() as u64);
        let loaded = load(engine.as_mut(), &data, &mut |table| {
            bar.set_message(format!("loading TPC-H SF {sf} into {kind}: {table}"));
            bar.inc(1);
        });
        bar.finish_and_clear();
        let seconds = match loaded {
            Ok(s) => s,
            Err(e) => {
                ctx.fail(format!("tpch: loading into {kind}: {e}"));
                continue;
            }
        };
        let mut set_up = || -> Result<Vec<String>, LabError> {
            let mut notes = vec![format!("{kind}: loaded in {seconds:.1} s")];
            // Statistics where the engine keeps them (BeeDB gathers its own, or has none).
            if let Err(e) = engine.run("ANALYZE", &[]) {
                notes.push(format!("{kind}: ANALYZE: {e}"));
            }
            if kind == EngineKind::Postgres {
                engine.run("SET jit = off", &[])?;
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
            Err(e) => ctx.fail(format!("tpch: setting up {kind}: {e}")),
        }
    }

    let runs = ctx.runs.max(1);
    let bar = ctx.progress.phase(format!("TPC-H SF {sf}: {} queries", queries.len()), (queries.len() * engines.len()) as u64);
    for (n, sql) in &queries {
        let item = format!("q{n}");
        let ordered = has_order_by(sql);
        let known = known_answer(&options.material, *n, sf);
        let mut reference: Option<(EngineKind, Vec<Vec<Cell>>)> = None;
        for open in engines.iter_mut() {
            let kind = open.kind;
            bar.set_message(format!("{item} on {kind}"));
            let text = dialect(kind, sql);
            let mut times = Vec::new();
            let mut verified = true;
            let mut timed_out = false;
            for run in 0..=runs {
                let outcome = match open.engine.run(&text, &[]) {
                    Ok(o) => o,
                    Err(e) if e.timed_out => {
                        let limit = options.timeout.map(|t| t.as_secs_f64()).unwrap_or(0.0);
                        ctx.fail(format!("{item} on {kind}: timed out (over {limit} s), no answer"));
                        timed_out = true;
                        break;
                    }
                    Err(e) => {
                        ctx.fail(format!("{item} on {kind}: {e}"));
                        verified = false;
                        break;
                    }
                };
                if run > 0 {
                    times.push(outcome.elapsed.as_secs_f64() * 1e3);
                }
                let answer = outcome.rows;
                if run == 0 {
                    if let Some(k) = &known
                        && let Some(d) = compare_known(k, &answer, ordered)
                    {
                        ctx.fail(format!("{item} on {kind}: not the known answer at SF {sf}: {d}"));
                        verified = false;
                    }
                }
                match &reference {
                    None => reference = Some((kind, answer)),
                    Some((ref_kind, expected)) => {
                        if let Some(d) = compare_answers(expected, &answer, ordered) {
                            if verified {
                                ctx.fail(format!("{item} on {kind}: answer differs from {ref_kind}'s (run {run}): {d}"));
                            }
                            verified = false;
                        }
                    }
                }
            }
            bar.inc(1);
            if times.is_empty() && !timed_out {
                continue;
            }
            results.push(Measurement {
                item: item.clone(),
                engine: kind.name().to_string(),
                value: if timed_out { f64::NAN } else { verify::median(&times) },
                unit: "ms".into(),
                verified: verified && !timed_out,
                timed_out,
                runs: times,
            });
            if ctx.profile && !timed_out {
                match open.engine.explain_analyze(&text) {
                    Ok(Some(t)) => profiles.push((item.clone(), kind.name().to_string(), t)),
                    Ok(None) => {}
                    Err(e) => ctx.note(format!("{item} on {kind}: EXPLAIN ANALYZE failed: {e}")),
                }
            }
        }
    }
    bar.finish_and_clear();
    report(ctx, options, results, profiles)
}

fn report(ctx: &Ctx, options: &Options, results: Vec<Measurement>, profiles: Vec<(String, String, String)>) -> Report {
    let items = options.queries.iter().map(|n| (format!("q{n}"), describe(*n).to_string())).collect();
    let timeout = options.timeout.map_or("none".to_string(), |t| format!("{}s", t.as_secs_f64()));
    let mut r = ctx.report(
        "tpch",
        vec![
            ("sf".into(), options.sf.to_string()),
            ("threads".into(), options.threads.to_string()),
            ("timeout".into(), timeout),
            ("runs".into(), ctx.runs.max(1).to_string()),
        ],
        items,
        results,
    );
    r.profiles = profiles;
    r
}

/// What each query does, in a few words (the specification's names).
fn describe(n: u32) -> &'static str {
    match n {
        1 => "pricing summary report",
        2 => "minimum cost supplier (correlated min)",
        3 => "shipping priority",
        4 => "order priority checking (exists)",
        5 => "local supplier volume (6-way join)",
        6 => "forecasting revenue change",
        7 => "volume shipping",
        8 => "national market share",
        9 => "product type profit measure",
        10 => "returned item reporting",
        11 => "important stock identification",
        12 => "shipping modes and order priority",
        13 => "customer distribution (outer join)",
        14 => "promotion effect",
        15 => "top supplier (CTE)",
        16 => "parts/supplier relationship (not in)",
        17 => "small-quantity-order revenue (correlated avg)",
        18 => "large volume customer (in + group)",
        19 => "discounted revenue (or of ands)",
        20 => "potential part promotion (nested in, correlated sum)",
        21 => "suppliers who kept orders waiting (exists, not exists)",
        22 => "global sales opportunity (not exists)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_dialect_rewrites_dates_extract_and_substring() {
        assert_eq!(
            sqlite_dialect("where l_shipdate <= date '1998-12-01' - interval '90' day group by x"),
            "where l_shipdate <= date('1998-12-01', '-90 days') group by x"
        );
        assert_eq!(
            sqlite_dialect("o < date '1993-07-01' + interval '3' month\n and o >= date '1994-01-01'"),
            "o < date('1993-07-01', '+3 months')\n and o >= '1994-01-01'"
        );
        assert_eq!(
            sqlite_dialect("select extract(year from l_shipdate) as y, substring(c_phone from 1 for 2) as c"),
            "select cast(strftime('%Y', l_shipdate) as integer) as y, substr(c_phone, 1, 2) as c"
        );
        assert_eq!(sqlite_dialect("select 'date ''x''', a from t"), "select 'date ''x''', a from t");
    }

    #[test]
    fn every_query_reads_and_sqlite_forms_leave_no_postgres_syntax() {
        let Ok(material) = find_material() else {
            return;
        };
        for n in 1..=22 {
            let sql = query_text(&material, n, 0.01).unwrap();
            assert!(!sql.ends_with(';'), "q{n}");
            let lite = sqlite_dialect(&sql);
            for form in ["interval", "date '", "extract(", "substring("] {
                assert!(!lite.contains(form), "q{n} keeps {form}: {lite}");
            }
        }
        assert!(query_text(&material, 11, 0.01).unwrap().contains("0.0100000000"));
    }

    #[test]
    fn answers_compare_with_tpch_tolerance_and_order() {
        let row = |a: i64, b: f64, c: &str| vec![Cell::Int(a), Cell::Float(b), Cell::Text(c.into())];
        let e = vec![row(1, 10.0, "x"), row(2, 20.0, "y")];
        assert_eq!(compare_answers(&e, &[row(1, 10.004, "x "), row(2, 20.0, "y")], true), None);
        assert!(compare_answers(&e, &[row(1, 10.5, "x"), row(2, 20.0, "y")], true).is_some());
        assert_eq!(compare_answers(&[vec![Cell::Float(1.02)]], &[vec![Cell::Float(1.03)]], true), None);
        assert!(compare_answers(&[vec![Cell::Float(1.02)]], &[vec![Cell::Float(1.0301)]], true).is_some());
        let swapped = [row(2, 20.0, "y"), row(1, 10.0, "x")];
        assert!(compare_answers(&e, &swapped, true).unwrap().contains("another order"));
        assert_eq!(compare_answers(&e, &swapped, false), None);
        assert!(compare_answers(&e, &e[..1], false).unwrap().contains("1 rows instead of 2"));
        assert!(compare_answers(&[vec![Cell::Null]], &[vec![Cell::Int(0)]], false).is_some());

        let known = parse_answer("a|b|c\r\n1|10.00|x\r\n2|20.00|\"y\"\r\n");
        assert_eq!(compare_known(&known, &e, true), None);
        assert!(compare_known(&known, &swapped, true).is_some());
        assert_eq!(compare_known(&known, &swapped, false), None);
        assert!(compare_known(&known, &[row(1, 10.0, "x"), row(2, 20.2, "y")], true).is_some());
        let null = parse_answer("avg_yearly\r\n\"\"\r\n");
        assert_eq!(compare_known(&null, &[vec![Cell::Null]], true), None);
        assert!(compare_known(&null, &[vec![Cell::Int(0)]], true).is_some());
    }
}
