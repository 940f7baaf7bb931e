//! `beedb bench optimizer`: the POSTGRES study's three optimizer tests (seed §2.4 and
//! §3.3, `shared/workloads/wisconsin.md`). The plan each engine chooses is timed;
//! on BeeDB every forced alternative is timed too (PostgreSQL's `enable_*` settings,
//! which BeeDB has), and the chosen plan must be within [`RATIO_TARGET`] of the best
//! of them.
//!
//! 1. **Access path**: `CREATE TABLE tmp AS SELECT * FROM tenkK WHERE unique2 > 1 AND
//!    unique2 < X·N/10 + 2` for X = 1..9 (selectivity 0.1 to 0.9; the study's "retrieve
//!    into temp", alternating tenk1 and tenk2 from run to run as it did), with an
//!    index on `unique2` (the heap is in `unique2` order: a clustered index). Forced:
//!    sequential scan (`enable_indexscan = off`), index scan (`enable_seqscan = off`).
//! 2. **Join method**: `onek1`, `onek2` (the first N/10 rows of tenk1, tenk2), the
//!    study's queries 1–6: an equi-join on `unique2`, the same with `onek2.unique2 <
//!    100`, and the non-equi-join `onek1.unique2 < onek2.unique2 AND onek1.unique2 <
//!    10 AND onek2.unique2 < 100`, each without (j1, j3, j5) and with (j2, j4, j6)
//!    indexes on `unique2`. Forced: hash join (`enable_nestloop = off`), index nested
//!    loop (`enable_hashjoin = off`, with the indexes), nested loop (`enable_hashjoin
//!    = off, enable_indexscan = off`; left out above [`NESTED_LOOP_PAIRS_MAX`] pairs,
//!    as the study's "too long"). A hash join needs equality keys: j5 and j6 have
//!    nested loops only (the study's "not appropriate").
//! 3. **Correlated ranges**: `unique2 < 502 AND unique2 > 500` must be estimated at
//!    about 1 row and `unique2 < 502 AND unique2 < 500` at about 500 (and the same at
//!    102/100), not the product of two selectivities: the estimate (EXPLAIN's rows)
//!    against the actual count, within a factor of [`ESTIMATE_FACTOR`].
//!
//! Each engine's answers are compared with the first engine's, and every forced
//! plan's with the chosen plan's on the same engine. DuckDB takes no part (it has no
//! index scans to choose between); PostgreSQL and SQLite show their own choice (its
//! EXPLAIN, EXPLAIN QUERY PLAN) and time beside BeeDB's.

use std::collections::HashMap;

use crate::bench::{Ctx, Open, measure_statements};
use crate::engine::{Cell, Durability, Engine, EngineKind, LabResult, Outcome};
use crate::report::{Measurement, Report, Section};
use crate::verify;
use crate::workload::wisconsin;

/// The chosen plan passes when its time is at most this times the best forced one's.
pub const RATIO_TARGET: f64 = 1.25;
/// A forced nested loop over more pairs than this is not run (it would take minutes).
pub const NESTED_LOOP_PAIRS_MAX: f64 = 5e7;
/// An estimate passes when it is within this factor of the actual row count.
pub const ESTIMATE_FACTOR: f64 = 2.0;

const CHECK_SELECTION: &str = "SELECT count(*), sum(unique1), sum(unique2), min(stringu1), max(stringu2) FROM tmp";
const CHECK_JOIN: &str = "SELECT count(*), sum(unique1), sum(unique2), sum(b_unique1), sum(b_unique2) FROM tmp";

/// A forced alternative: its name and the settings that force it on BeeDB.
struct Forced {
    name: &'static str,
    settings: &'static [&'static str],
}

const SEQ_SCAN: Forced = Forced { name: "seq scan", settings: &["enable_indexscan"] };
const INDEX_SCAN: Forced = Forced { name: "index scan", settings: &["enable_seqscan"] };
const HASH_JOIN: Forced = Forced { name: "hash join", settings: &["enable_nestloop"] };
const INDEX_NESTED_LOOP: Forced = Forced { name: "index nested loop", settings: &["enable_hashjoin"] };
const NESTED_LOOP: Forced = Forced { name: "nested loop", settings: &["enable_hashjoin", "enable_indexscan"] };

/// One of the study's join queries.
struct JoinQuery {
    item: &'static str,
    what: &'static str,
    indexed: bool,
    equi: bool,
    condition: &'static str,
}

const JOINS: [JoinQuery; 6] = [
    JoinQuery { item: "j1", what: "equi-join, no index", indexed: false, equi: true, condition: "a.unique2 = b.unique2" },
    JoinQuery { item: "j3", what: "equi-join, onek2.unique2 < 100, no index", indexed: false, equi: true, condition: "a.unique2 = b.unique2 AND b.unique2 < 100" },
    JoinQuery { item: "j5", what: "non-equi-join, no index", indexed: false, equi: false, condition: "a.unique2 < b.unique2 AND a.unique2 < 10 AND b.unique2 < 100" },
    JoinQuery { item: "j2", what: "equi-join, indexes on unique2", indexed: true, equi: true, condition: "a.unique2 = b.unique2" },
    JoinQuery { item: "j4", what: "equi-join, onek2.unique2 < 100, indexes", indexed: true, equi: true, condition: "a.unique2 = b.unique2 AND b.unique2 < 100" },
    JoinQuery { item: "j6", what: "non-equi-join, indexes", indexed: true, equi: false, condition: "a.unique2 < b.unique2 AND a.unique2 < 10 AND b.unique2 < 100" },
];

/// The study's test 3: (item, predicate, what the estimate should be near).
const RANGES: [(&str, &str); 4] = [
    ("r1", "unique2 < 502 AND unique2 > 500"),
    ("r2", "unique2 < 502 AND unique2 < 500"),
    ("r3", "unique2 < 102 AND unique2 > 100"),
    ("r4", "unique2 < 102 AND unique2 < 100"),
];

fn join_sql(q: &JoinQuery) -> String {
    format!(
        "CREATE TABLE tmp AS SELECT {} FROM onek1 a, onek2 b WHERE {}",
        wisconsin::select_list(&[("a", ""), ("b", "b_")]),
        q.condition
    )
}

/// The query of a `CREATE TABLE tmp AS` statement, for EXPLAIN.
fn query_of(statement: &str) -> &str {
    statement.strip_prefix("CREATE TABLE tmp AS ").unwrap_or(statement)
}

/// An engine's plan for `query` as text: EXPLAIN's lines (SQLite: EXPLAIN QUERY
/// PLAN's details).
fn explain(engine: &mut dyn Engine, kind: EngineKind, query: &str) -> LabResult<String> {
    let sql = match kind {
        EngineKind::Sqlite => format!("EXPLAIN QUERY PLAN {query}"),
        _ => format!("EXPLAIN {query}"),
    };
    let rows = engine.run(&sql, &[])?.rows;
    let text = |c: &Cell| match c {
        Cell::Text(s) => s.clone(),
        other => other.to_string(),
    };
    Ok(rows
        .iter()
        .filter_map(|r| if kind == EngineKind::Sqlite { r.last() } else { r.first() })
        .map(text)
        .collect::<Vec<_>>()
        .join("\n"))
}

/// The access path a plan's text shows.
pub fn scan_label(plan: &str) -> &'static str {
    if plan.contains("Bitmap") {
        "bitmap scan"
    } else if plan.contains("Index Scan") || plan.contains("Index Only Scan") || plan.contains("USING INDEX") || plan.contains("USING COVERING INDEX") || plan.contains("USING PRIMARY KEY") {
        "index scan"
    } else {
        "seq scan"
    }
}

/// The join method a plan's text shows (BeeDB's, PostgreSQL's EXPLAIN or SQLite's
/// EXPLAIN QUERY PLAN).
pub fn join_label(plan: &str) -> &'static str {
    if plan.contains("Index Nested Loop") {
        return "index nested loop";
    }
    // `Hash Join`, or an outer or semi join's `Hash Left Join` (BeeDB and PostgreSQL).
    let hash = plan.lines().any(|l| {
        let op = l.trim_start().trim_start_matches("->").trim_start();
        op.starts_with("Hash ") && op.contains(" Join")
    });
    if hash {
        return "hash join";
    }
    if plan.contains("Merge Join") {
        return "merge join";
    }
    // PostgreSQL: a nested loop whose inner index scan is keyed by the outer row.
    let keyed_inner = plan.lines().any(|l| l.contains("Index Cond") && (l.contains("= a.") || l.contains("= b.")));
    // SQLite: a lookup by equality through an index.
    let lookup = plan.lines().any(|l| l.starts_with("SEARCH") && l.contains("=?"));
    if plan.contains("AUTOMATIC") {
        "nested loop (automatic index)"
    } else if keyed_inner || lookup {
        "index nested loop"
    } else {
        "nested loop"
    }
}

/// The first estimated row count in a plan's text (`rows=N`), if it shows one.
pub fn estimated_rows(plan: &str) -> Option<f64> {
    let at = plan.find("rows=")? + 5;
    let digits: String = plan[at..].chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    digits.parse().ok()
}

/// Answers of every run, per engine.
type Answers = HashMap<EngineKind, Vec<Vec<Vec<Cell>>>>;

/// Times `statements` (warm-up first) on `engines`, checking `check` over `tmp`, and
/// returns the measurements and each engine's answers.
fn measure_into_temp(
    ctx: &mut Ctx,
    engines: &mut [Open],
    item: &str,
    statements: &[String],
    check: &'static str,
) -> (Vec<Measurement>, Answers) {
    let mut answers: Answers = HashMap::new();
    let mut checker = |e: &mut dyn Engine, _o: Outcome| -> LabResult<Vec<Vec<Cell>>> {
        let rows = e.run(check, &[])?.rows;
        e.run("DROP TABLE tmp", &[])?;
        answers.entry(e.kind()).or_default().push(verify::canonical(rows.clone()));
        Ok(rows)
    };
    let m = measure_statements(ctx, engines, item, statements, &mut checker);
    (m, answers)
}

/// Runs `statements` on the BeeDB engines with `forced`'s settings off, compares the
/// answers with the chosen plan's (`chosen`), and returns the measurements (item
/// `"{item} [{forced}]"`) and each engine's plan under the settings.
#[allow(clippy::too_many_arguments)]
fn measure_forced(
    ctx: &mut Ctx,
    bees: &mut [Open],
    item: &str,
    statements: &[String],
    check: &'static str,
    forced: &Forced,
    chosen: &Answers,
    label: fn(&str) -> &'static str,
) -> (Vec<Measurement>, HashMap<EngineKind, &'static str>) {
    let mut plans = HashMap::new();
    for open in bees.iter_mut() {
        for s in forced.settings {
            if let Err(e) = open.engine.run(&format!("SET {s} = off"), &[]) {
                ctx.fail(format!("{} on {}: SET {s} = off: {e}", item, open.kind));
            }
        }
        match explain(open.engine.as_mut(), open.kind, query_of(&statements[0])) {
            Ok(p) => {
                let got = label(&p);
                if got != forced.name {
                    ctx.note(format!("{item} [{}] on {}: the settings gave a {got}", forced.name, open.kind));
                }
                plans.insert(open.kind, got);
            }
            Err(e) => ctx.fail(format!("{item} [{}] on {}: EXPLAIN: {e}", forced.name, open.kind)),
        }
    }
    let forced_item = format!("{item} [{}]", forced.name);
    let (mut measured, answers) = measure_into_temp(ctx, bees, &forced_item, statements, check);
    for open in bees.iter_mut() {
        for s in forced.settings {
            let _ = open.engine.run(&format!("RESET {s}"), &[]);
        }
    }
    for m in &mut measured {
        let Some(kind) = EngineKind::parse(&m.engine) else { continue };
        if let (Some(want), Some(got)) = (chosen.get(&kind), answers.get(&kind))
            && let Some(d) = want.iter().zip(got).find_map(|(w, g)| verify::difference(w, g))
        {
            ctx.fail(format!("{forced_item} on {kind}: answer differs from the chosen plan's: {d}"));
            m.verified = false;
        }
    }
    (measured, plans)
}

fn value_of(results: &[Measurement], item: &str, engine: EngineKind) -> Option<f64> {
    results.iter().find(|m| m.item == item && m.engine == engine.name()).map(|m| m.value)
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| crate::report::format_value(v, "ms"))
}

/// Loads tenk1, tenk2 (with their index on unique2) and onek1, onek2 into `engine`.
fn load(engine: &mut dyn Engine, data: &std::path::Path, n: usize) -> LabResult<()> {
    engine.set_durability(Durability::Normal)?;
    for name in ["tenk1", "tenk2"] {
        engine.run(&wisconsin::create_table_sql(name), &[])?;
        engine.bulk_load(name, &data.join(format!("{name}.tbl")))?;
        engine.run(&format!("CREATE INDEX {name}_unique2 ON {name} (unique2)"), &[])?;
    }
    for (small, big) in [("onek1", "tenk1"), ("onek2", "tenk2")] {
        engine.run(&format!("CREATE TABLE {small} AS SELECT * FROM {big} WHERE unique2 < {}", (n / 10).max(1)), &[])?;
    }
    engine.run("ANALYZE", &[])?;
    Ok(())
}

/// Runs the three tests at size `n` and returns the report.
pub fn run(ctx: &mut Ctx, n: usize) -> Report {
    let n = n.max(1000);
    let mut results: Vec<Measurement> = Vec::new();
    let mut items: Vec<(String, String)> = Vec::new();
    let mut sections = Vec::new();
    if ctx.kinds.contains(&EngineKind::Duckdb) {
        ctx.kinds.retain(|k| *k != EngineKind::Duckdb);
        ctx.note("duckdb takes no part in the optimizer workload: it has no index scans to choose between");
    }
    let data = match wisconsin::ensure_data(ctx, n) {
        Ok(d) => d,
        Err(e) => {
            ctx.fail(format!("generating data: {e}"));
            return ctx.report("optimizer", vec![("n".into(), n.to_string())], items, results);
        }
    };
    let mut engines = ctx.open_all(&format!("optimizer-n{n}"));
    let bar = ctx.progress.phase(format!("loading tenk1, tenk2, onek1, onek2, N = {n}"), engines.len() as u64);
    let mut loaded = Vec::new();
    for mut open in engines.drain(..) {
        match load(open.engine.as_mut(), &data, n) {
            Ok(()) => loaded.push(open),
            Err(e) => ctx.fail(format!("{}: loading: {e}", open.kind)),
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    engines = loaded;
    // BeeDB engines first (ctx.kinds is in report order): forced plans run on them only.
    let beedbs = engines.iter().take_while(|o| o.kind.is_beedb()).count();
    let bee_kinds: Vec<EngineKind> = engines[..beedbs].iter().map(|o| o.kind).collect();
    let peer_kinds: Vec<EngineKind> = engines[beedbs..].iter().map(|o| o.kind).collect();
    let total = 9 + JOINS.len() as u64 + 1;
    let bar = ctx.progress.phase(format!("optimizer tests, N = {n}"), total);

    // Test 1: sequential scan or index scan, X = 1..9.
    let mut scan_rows = Vec::new();
    for x in 1..=9usize {
        let item = format!("scan X={x}");
        bar.set_message(item.clone());
        let hi = x * n / 10 + 2;
        let statements: Vec<String> = (0..=ctx.runs)
            .map(|i| format!("CREATE TABLE tmp AS SELECT * FROM tenk{} WHERE unique2 > 1 AND unique2 < {hi}", 1 + i % 2))
            .collect();
        items.push((item.clone(), format!("SELECT * WHERE unique2 > 1 AND unique2 < {hi} into temp (selectivity 0.{x}), the chosen plan")));
        let chosen_plans = plans(ctx, &mut engines, &item, query_of(&statements[0]), scan_label);
        let (m, chosen) = measure_into_temp(ctx, &mut engines, &item, &statements, CHECK_SELECTION);
        results.extend(m);
        let mut forced_times: Vec<(&'static str, HashMap<EngineKind, f64>)> = Vec::new();
        for forced in [&SEQ_SCAN, &INDEX_SCAN] {
            let (m, _) = measure_forced(ctx, &mut engines[..beedbs], &item, &statements, CHECK_SELECTION, forced, &chosen, scan_label);
            let forced_item = format!("{item} [{}]", forced.name);
            items.push((forced_item.clone(), format!("forced {}", forced.name)));
            forced_times.push((forced.name, bee_kinds.iter().filter_map(|k| value_of(&m, &forced_item, *k).map(|v| (*k, v))).collect()));
            results.extend(m);
        }
        for k in &bee_kinds {
            let mut row = vec![x.to_string(), format!("0.{x}"), k.name().to_string()];
            row.extend(verdict(&results, &item, *k, chosen_plans.get(k).copied(), &forced_times));
            row.extend(peer_kinds.iter().map(|p| format!("{} {}", chosen_plans.get(p).copied().unwrap_or("?"), ms(value_of(&results, &item, *p)))));
            scan_rows.push(row);
        }
        bar.inc(1);
    }
    let mut header: Vec<String> = ["X", "selectivity", "engine", "chosen plan", "ms", "best forced", "ms", "ratio", "≤ 1.25"].map(String::from).to_vec();
    header.extend(peer_kinds.iter().map(|p| format!("{p} plan, ms")));
    sections.push(Section { title: "Test 1: sequential scan or index scan (clustered index on unique2)".into(), header, rows: scan_rows });

    // Test 2: join methods on onek1, onek2.
    let m_rows = (n / 10).max(1) as f64;
    let mut join_rows = Vec::new();
    let mut indexed = false;
    for q in &JOINS {
        if q.indexed && !indexed {
            for open in engines.iter_mut() {
                let made = ["onek1", "onek2"]
                    .iter()
                    .try_for_each(|t| open.engine.run(&format!("CREATE INDEX {t}_unique2 ON {t} (unique2)"), &[]).map(|_| ()))
                    .and_then(|_| open.engine.run("ANALYZE", &[]).map(|_| ()));
                if let Err(e) = made {
                    ctx.fail(format!("{}: indexes on onek1, onek2: {e}", open.kind));
                }
            }
            indexed = true;
        }
        bar.set_message(q.item);
        let statements = vec![join_sql(q); ctx.runs + 1];
        items.push((q.item.to_string(), format!("{}, the chosen plan", q.what)));
        let chosen_plans = plans(ctx, &mut engines, q.item, query_of(&statements[0]), join_label);
        let (m, chosen) = measure_into_temp(ctx, &mut engines, q.item, &statements, CHECK_JOIN);
        results.extend(m);
        // Rows each side of a nested loop reads after its restrictions.
        let pairs = match q.item {
            "j1" | "j2" => m_rows * m_rows,
            "j3" | "j4" => m_rows * m_rows.min(100.0),
            _ => m_rows.min(10.0) * m_rows.min(100.0),
        };
        let mut alternatives: Vec<&Forced> = Vec::new();
        let mut skipped = Vec::new();
        if q.equi {
            alternatives.push(&HASH_JOIN);
            if q.indexed {
                alternatives.push(&INDEX_NESTED_LOOP);
            }
        }
        // Without indexes and keys, the plain nested loop is the only way (no index
        // scan to turn off); with them it is forced like the others.
        if pairs <= NESTED_LOOP_PAIRS_MAX {
            alternatives.push(&NESTED_LOOP);
        } else {
            skipped.push(format!("nested loop not run ({pairs:.0} pairs)"));
        }
        let mut forced_times: Vec<(&'static str, HashMap<EngineKind, f64>)> = Vec::new();
        for forced in alternatives {
            let (m, _) = measure_forced(ctx, &mut engines[..beedbs], q.item, &statements, CHECK_JOIN, forced, &chosen, join_label);
            let forced_item = format!("{} [{}]", q.item, forced.name);
            items.push((forced_item.clone(), format!("forced {}", forced.name)));
            forced_times.push((forced.name, bee_kinds.iter().filter_map(|k| value_of(&m, &forced_item, *k).map(|v| (*k, v))).collect()));
            results.extend(m);
        }
        for k in &bee_kinds {
            let mut row = vec![q.item.to_string(), q.what.to_string(), k.name().to_string()];
            let chosen_plan = chosen_plans.get(k).copied();
            let mut v = verdict(&results, q.item, *k, chosen_plan, &forced_times);
            // The right method: the fastest one's, or one as fast (within the target).
            let best_method = (v[2] != "-").then(|| v[2].clone());
            let right = match (chosen_plan, best_method) {
                (Some(c), Some(b)) if c == b => "yes".to_string(),
                (Some(_), Some(_)) if v[5] == "yes" => "as fast".to_string(),
                (Some(_), Some(_)) => "no".to_string(),
                _ => "-".to_string(),
            };
            v.push(right);
            row.extend(v);
            row.push(skipped.join("; "));
            row.extend(peer_kinds.iter().map(|p| format!("{} {}", chosen_plans.get(p).copied().unwrap_or("?"), ms(value_of(&results, q.item, *p)))));
            join_rows.push(row);
        }
        bar.inc(1);
    }
    let mut header: Vec<String> = ["query", "what", "engine", "chosen plan", "ms", "best forced", "ms", "ratio", "≤ 1.25", "right method", "left out"].map(String::from).to_vec();
    header.extend(peer_kinds.iter().map(|p| format!("{p} plan, ms")));
    sections.push(Section { title: format!("Test 2: join methods on onek1, onek2 ({} rows each)", m_rows as usize), header, rows: join_rows });

    // Test 3: estimates of two ranges on one column.
    bar.set_message("estimates");
    let mut range_rows = Vec::new();
    for (item, predicate) in RANGES {
        let query = format!("SELECT * FROM tenk1 WHERE {predicate}");
        let mut row = vec![item.to_string(), predicate.to_string()];
        let actual = engines.first_mut().and_then(|o| {
            o.engine.run(&format!("SELECT count(*) FROM tenk1 WHERE {predicate}"), &[]).ok().and_then(|r| match r.rows.first().and_then(|r| r.first()) {
                Some(Cell::Int(c)) => Some(*c as f64),
                _ => None,
            })
        });
        row.push(actual.map_or("?".into(), |a| format!("{a:.0}")));
        for open in engines.iter_mut() {
            if open.kind == EngineKind::BeedbGeneric {
                continue; // the same optimizer as beedb's
            }
            let estimate = explain(open.engine.as_mut(), open.kind, &query).ok().and_then(|p| estimated_rows(&p));
            let cell = match (estimate, actual) {
                (Some(e), Some(a)) => {
                    let ratio = e.max(1.0) / a.max(1.0);
                    let ok = (1.0 / ESTIMATE_FACTOR..=ESTIMATE_FACTOR).contains(&ratio);
                    if open.kind == EngineKind::Beedb && !ok {
                        ctx.note(format!("{item}: BeeDB estimates {e:.0} rows, {a:.0} found"));
                    }
                    format!("{e:.0}{}", if ok { "" } else { " (off)" })
                }
                (Some(e), None) => format!("{e:.0}"),
                (None, _) => "no estimate".into(),
            };
            row.push(cell);
        }
        range_rows.push(row);
    }
    bar.inc(1);
    bar.finish_and_clear();
    let mut header: Vec<String> = ["query", "predicate", "actual rows"].map(String::from).to_vec();
    header.extend(engines.iter().filter(|o| o.kind != EngineKind::BeedbGeneric).map(|o| format!("{} estimate", o.kind)));
    sections.push(Section { title: "Test 3: correlated ranges on tenk1.unique2 (estimated vs actual rows)".into(), header, rows: range_rows });

    let mut report = ctx.report("optimizer", vec![("n".into(), n.to_string()), ("runs".into(), ctx.runs.to_string())], items, results);
    report.sections = sections;
    report
}

/// Each engine's chosen plan for `query`, labelled; a failed EXPLAIN is noted.
fn plans(ctx: &mut Ctx, engines: &mut [Open], item: &str, query: &str, label: fn(&str) -> &'static str) -> HashMap<EngineKind, &'static str> {
    let mut out = HashMap::new();
    for open in engines.iter_mut() {
        match explain(open.engine.as_mut(), open.kind, query) {
            Ok(p) => {
                out.insert(open.kind, label(&p));
            }
            Err(e) => ctx.note(format!("{item} on {}: EXPLAIN failed: {e}", open.kind)),
        }
    }
    out
}

/// The verdict columns for engine `k` on `item`: chosen plan, its time, the best
/// forced alternative (name and time), the ratio and whether it meets the target.
fn verdict(
    results: &[Measurement],
    item: &str,
    k: EngineKind,
    chosen_plan: Option<&'static str>,
    forced: &[(&'static str, HashMap<EngineKind, f64>)],
) -> Vec<String> {
    let chosen = value_of(results, item, k);
    let best = forced
        .iter()
        .filter_map(|(name, times)| times.get(&k).map(|t| (*name, *t)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let ratio = match (chosen, best) {
        (Some(c), Some((_, b))) if b > 0.0 => Some(c / b),
        _ => None,
    };
    vec![
        chosen_plan.unwrap_or("?").to_string(),
        ms(chosen),
        best.map_or("-".into(), |(name, _)| name.to_string()),
        ms(best.map(|b| b.1)),
        ratio.map_or("-".into(), |r| format!("{r:.2}")),
        ratio.map_or("-".into(), |r| if r <= RATIO_TARGET { "yes".into() } else { "no".into() }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_read_each_engines_plans() {
        assert_eq!(scan_label("Index Scan using tenk1_unique2 on tenk1  (cost=5.00 rows=10 width=4)"), "index scan");
        assert_eq!(scan_label("Seq Scan on tenk1  (cost=5.00 rows=10 width=4)"), "seq scan");
        assert_eq!(scan_label("Bitmap Heap Scan on tenk1\n  ->  Bitmap Index Scan on tenk1_unique2"), "bitmap scan");
        assert_eq!(scan_label("SEARCH tenk1 USING INDEX tenk1_unique2 (unique2>? AND unique2<?)"), "index scan");
        assert_eq!(scan_label("SCAN tenk1"), "seq scan");
        assert_eq!(join_label("Project\n  Output: unique2\n  ->  Index Nested Loop\n        Index Cond: (unique2 = unique2)"), "index nested loop");
        assert_eq!(join_label("Hash Join  (cost=1..2 rows=3 width=4)"), "hash join");
        assert_eq!(join_label("Project\n  ->  Hash Left Join\n        Hash Cond: (unique2 = unique2)"), "hash join");
        assert_eq!(join_label("Nested Loop Left Join\n  ->  Seq Scan on a\n  ->  Seq Scan on b"), "nested loop");
        assert_eq!(join_label("Nested Loop\n  ->  Seq Scan on onek2 b\n  ->  Index Scan using onek1_unique2 on onek1 a\n        Index Cond: (unique2 = b.unique2)"), "index nested loop");
        assert_eq!(join_label("SCAN b\nSEARCH a USING INDEX onek1_unique2 (unique2=?)"), "index nested loop");
        assert_eq!(join_label("SCAN a\nSCAN b"), "nested loop");
        assert_eq!(join_label("SCAN a\nSEARCH b USING AUTOMATIC COVERING INDEX (unique2=?)"), "nested loop (automatic index)");
        assert_eq!(estimated_rows("Seq Scan on tenk1  (cost=12.00 rows=500 width=4)"), Some(500.0));
        assert_eq!(estimated_rows("Index Scan using i on t  (cost=0.29..8.31 rows=1 width=244)"), Some(1.0));
        assert_eq!(estimated_rows("SCAN t"), None);
    }
}
