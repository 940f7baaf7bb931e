//! Bulk load: COPY of every TPC-H table at a scale factor, seconds and bytes on disk
//! per table (tables are loaded one after another into one fresh database; the bytes
//! of a table are the growth of the database, flushed, while it was loaded).

use std::time::Instant;

use crate::bench::{Ctx, Open};
use crate::engine::Cell;
use crate::report::{Measurement, Report};
use crate::tpch_data::{self, TABLE_NAMES};
use crate::verify;

/// One check per table: its row count and a sum of its first column, which every
/// engine must agree on (and the count must equal the file's lines).
fn check_sql(table: &str) -> String {
    let first = tpch_data::SCHEMA
        .lines()
        .find(|l| l.starts_with(&format!("create table {table} (")))
        .and_then(|l| l.split_once('(').map(|(_, r)| r))
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or("1")
        .to_string();
    format!("SELECT count(*), sum({first}) FROM {table}")
}

pub fn run(ctx: &mut Ctx, sf: f64) -> Report {
    let dir = ctx.data.join(format!("tpch-sf{sf}"));
    let bar = ctx.progress.phase(format!("generating TPC-H SF {sf}"), TABLE_NAMES.len() as u64);
    let data = tpch_data::ensure_data_with(&dir, sf, |_| bar.inc(1));
    bar.finish_and_clear();
    let mut results = Vec::new();
    let data = match data {
        Ok(d) => d,
        Err(e) => {
            ctx.fail(format!("generating TPC-H data: {e}"));
            return report(ctx, sf, results);
        }
    };
    let lines: Vec<u64> = TABLE_NAMES
        .iter()
        .map(|t| std::fs::read(data.join(format!("{t}.tbl"))).map(|b| bytecount(&b)).unwrap_or(0))
        .collect();

    // seconds[engine][table] over the runs; bytes from the last run.
    let runs = ctx.runs.max(1);
    let kinds = ctx.kinds.clone();
    let mut seconds = vec![vec![Vec::new(); TABLE_NAMES.len() + 1]; kinds.len()];
    let mut bytes = vec![vec![0f64; TABLE_NAMES.len() + 1]; kinds.len()];
    let mut ok = vec![true; kinds.len()];
    let mut answers: Vec<Option<Vec<Vec<Vec<Cell>>>>> = vec![None; kinds.len()];
    for run in 0..runs {
        let engines = ctx.open_all(&format!("load-sf{sf}"));
        for Open { kind, mut engine } in engines {
            let e = kinds.iter().position(|k| *k == kind).expect("engine taking part");
            let bar = ctx.progress.phase(format!("loading SF {sf} into {kind} (run {} of {runs})", run + 1), TABLE_NAMES.len() as u64);
            let result = (|| {
                engine.batch(tpch_data::SCHEMA)?;
                let mut before = engine.bytes_on_disk()?;
                let mut total = 0.0;
                let mut checks = Vec::new();
                for (t, table) in TABLE_NAMES.iter().enumerate() {
                    bar.set_message(format!("loading SF {sf} into {kind}: {table}"));
                    let start = Instant::now();
                    let rows = engine.bulk_load(table, &data.join(format!("{table}.tbl")))?;
                    let elapsed = start.elapsed().as_secs_f64();
                    let after = engine.bytes_on_disk()?;
                    seconds[e][t].push(elapsed);
                    bytes[e][t] = after.saturating_sub(before) as f64;
                    before = after;
                    total += elapsed;
                    let answer = engine.run(&check_sql(table), &[])?.rows;
                    if rows != 0 && rows != lines[t] {
                        ctx.fail(format!("load on {kind}: {table}: COPY reported {rows} rows, the file has {}", lines[t]));
                        ok[e] = false;
                    }
                    if answer.first().and_then(|r| r.first()) != Some(&Cell::Int(lines[t] as i64)) {
                        ctx.fail(format!("load on {kind}: {table}: count(*) is {:?}, the file has {} rows", answer.first(), lines[t]));
                        ok[e] = false;
                    }
                    checks.push(verify::canonical(answer));
                    bar.inc(1);
                }
                seconds[e][TABLE_NAMES.len()].push(total);
                bytes[e][TABLE_NAMES.len()] = engine.bytes_on_disk()? as f64;
                Ok::<_, crate::engine::LabError>(checks)
            })();
            bar.finish_and_clear();
            match result {
                Ok(checks) => answers[e] = Some(checks),
                Err(err) => {
                    ctx.fail(format!("load on {kind}: {err}"));
                    ok[e] = false;
                }
            }
        }
    }
    // Every engine's table checks must equal the first engine's.
    let reference = answers.iter().position(|a| a.is_some());
    if let Some(r) = reference {
        for e in 0..kinds.len() {
            if let (Some(expected), Some(actual)) = (&answers[r], &answers[e]) {
                for (t, (x, y)) in expected.iter().zip(actual).enumerate() {
                    if let Some(d) = verify::difference(x, y) {
                        ctx.fail(format!("load: {} on {} differs from {}: {d}", TABLE_NAMES[t], kinds[e], kinds[r]));
                        ok[e] = false;
                    }
                }
            }
        }
    }
    for unit in ["s", "bytes"] {
        for (e, kind) in kinds.iter().enumerate() {
            if answers[e].is_none() {
                continue;
            }
            for t in 0..=TABLE_NAMES.len() {
                let (value, runs) = match unit {
                    "s" => (verify::median(&seconds[e][t]), seconds[e][t].clone()),
                    _ => (bytes[e][t], Vec::new()),
                };
                results.push(Measurement {
                    timed_out: false,
                    item: if t < TABLE_NAMES.len() { TABLE_NAMES[t] } else { "all tables" }.into(),
                    engine: kind.name().into(),
                    value,
                    unit: unit.into(),
                    verified: ok[e],
                    runs,
                });
            }
        }
    }
    report(ctx, sf, results)
}

fn bytecount(b: &[u8]) -> u64 {
    b.iter().filter(|&&c| c == b'\n').count() as u64
}

fn report(ctx: &Ctx, sf: f64, results: Vec<Measurement>) -> Report {
    let mut items: Vec<(String, String)> = TABLE_NAMES.iter().map(|t| (t.to_string(), String::new())).collect();
    items.push(("all tables".into(), "the eight tables, one after another".into()));
    ctx.report("load", vec![("sf".into(), sf.to_string()), ("runs".into(), ctx.runs.max(1).to_string())], items, results)
}
