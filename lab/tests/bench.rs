//! The lab end to end at tiny sizes, on the engines that are always there (BeeDB with
//! bees on and off, SQLite): every workload runs, every answer verifies, the saved
//! results have the documented shape. Peers (DuckDB, PostgreSQL) are exercised by
//! `tests/peers.rs` when installed.

use beedb_lab::cli::{Args, run};
use clap::Parser;

fn args(extra: &[&str], out: &std::path::Path) -> Args {
    let mut v = vec!["beedb bench"];
    v.extend_from_slice(extra);
    let out = out.display().to_string();
    v.extend_from_slice(&["--out", &out, "--quiet", "--engines", "beedb,beedb-generic,sqlite"]);
    Args::try_parse_from(v).expect("arguments parse")
}

fn saved_json(out: &std::path::Path, workload: &str) -> serde_json::Value {
    let results = out.join("results");
    let dir = std::fs::read_dir(&results).unwrap().next().unwrap().unwrap().path();
    let text = std::fs::read_to_string(dir.join(format!("{workload}.json"))).unwrap();
    assert!(dir.join(format!("{workload}-runs.csv")).is_file());
    serde_json::from_str(&text).unwrap()
}

#[test]
fn wisconsin_runs_all_32_queries_and_verifies_them() {
    let out = tempfile::tempdir().unwrap();
    let ok = run(&args(&["wisconsin", "--n", "1000", "--runs", "1"], out.path())).unwrap();
    assert!(ok, "every answer verifies");
    let json = saved_json(out.path(), "wisconsin");
    assert_eq!(json["workload"], "wisconsin");
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 32 * 3);
    for r in results {
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["unit"], "ms");
        assert!(r["value"].as_f64().unwrap() >= 0.0);
    }
    let engines: Vec<&str> = json["engines"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(engines, ["beedb", "beedb-generic", "sqlite"]);
}

#[test]
fn tp1_keeps_the_balance_invariant_with_two_clients() {
    let out = tempfile::tempdir().unwrap();
    let ok = run(&args(
        &["tp1", "--configs", "tpcb", "--scale", "0.01", "--seconds", "0.3", "--runs", "1", "--clients", "1,2", "--sync", "normal"],
        out.path(),
    ))
    .unwrap();
    assert!(ok, "the invariant holds on every engine");
    let json = saved_json(out.path(), "tp1");
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 2 * 3, "{json}");
    for r in results {
        assert_eq!(r["unit"], "tps");
        assert_eq!(r["verified"], true);
        assert!(r["value"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["item"].as_str().unwrap().starts_with("tpcb-s0.01 sync=normal clients="));
    }
}

/// TPC-C at a test size (`--scale` shrinks items and customers; not TPC-C compliant):
/// one warehouse, two clients, a second per run; every engine keeps the consistency
/// conditions (a broken one fails the run).
#[test]
fn tpcc_keeps_the_consistency_conditions() {
    let out = tempfile::tempdir().unwrap();
    let ok = run(&args(
        &["tpcc", "--warehouses", "1", "--scale", "0.01", "--seconds", "1", "--clients", "2", "--sync", "normal"],
        out.path(),
    ))
    .unwrap();
    assert!(ok, "the consistency conditions hold on every engine");
    let json = saved_json(out.path(), "tpcc");
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 2 * 3, "{json}");
    for r in results {
        assert_eq!(r["verified"], true, "{r}");
        assert!(r["value"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["item"], "w1 sync=normal clients=2");
    }
    let units: Vec<&str> = results.iter().map(|r| r["unit"].as_str().unwrap()).collect();
    assert!(units.contains(&"tpmC") && units.contains(&"tps"), "{units:?}");
    let notes = json["notes"].as_array().unwrap();
    let held = notes.iter().filter(|n| n.as_str().unwrap().contains("consistency conditions 1–4 hold")).count();
    assert_eq!(held, 3, "{notes:?}");
}

#[test]
fn load_copies_every_tpch_table_and_measures_bytes() {
    let out = tempfile::tempdir().unwrap();
    let ok = run(&args(&["load", "--sf", "0.002"], out.path())).unwrap();
    assert!(ok);
    let json = saved_json(out.path(), "load");
    let results = json["results"].as_array().unwrap();
    // 8 tables + the total, in seconds and in bytes, for 3 engines.
    assert_eq!(results.len(), 9 * 2 * 3);
    for r in results.iter().filter(|r| r["unit"] == "bytes" && r["item"] == "lineitem") {
        assert!(r["value"].as_f64().unwrap() > 100_000.0, "{r}");
    }
    let png = std::fs::read_dir(out.path().join("results")).unwrap().next().unwrap().unwrap().path();
    assert!(std::fs::read_dir(png).unwrap().any(|f| f.unwrap().path().extension().is_some_and(|e| e == "png")));
}

#[test]
fn tpch_queries_match_the_known_answers_on_every_engine() {
    if beedb_lab::workload::tpch::find_material().is_err() {
        println!("note: shared/tpch not found (set BEEDB_TPCH_DIR); skipped");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    // One query of each shape: aggregate over a scan, date arithmetic and joins,
    // extract(), a parameterised fraction (Q11), an outer join, substring + NOT EXISTS.
    let ok = run(&args(&["tpch", "--sf", "0.01", "--queries", "1,3,9,11,13,22", "--runs", "1"], out.path())).unwrap();
    assert!(ok, "every answer verifies against the known answers and across engines");
    let json = saved_json(out.path(), "tpch");
    assert_eq!(json["parameters"]["sf"], "0.01");
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 6 * 3, "{json}");
    for r in results {
        assert_eq!(r["verified"], true, "{r}");
        assert!(r.get("timed_out").is_none(), "{r}");
        assert_eq!(r["unit"], "ms");
    }
}

#[test]
fn a_tpch_query_over_its_timeout_is_stopped_and_reported() {
    if beedb_lab::workload::tpch::find_material().is_err() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    // Q9 (a six-way join over lineitem) cannot finish in a millisecond on any engine.
    let mut a = args(&["tpch", "--sf", "0.01", "--queries", "9", "--runs", "1", "--timeout", "0.001"], out.path());
    a.engines = Some(vec!["beedb".into(), "sqlite".into()]);
    let ok = run(&a).unwrap();
    assert!(!ok, "a query without an answer fails the run");
    let json = saved_json(out.path(), "tpch");
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{json}");
    for r in results {
        assert_eq!(r["timed_out"], true, "{r}");
        assert_eq!(r["verified"], false, "{r}");
    }
    let notes = json["notes"].as_array().unwrap();
    assert!(notes.iter().any(|n| n.as_str().unwrap().contains("q9 on beedb: timed out")), "{notes:?}");
}

/// TPC-DS at SF 0.01 on a handful of queries — joins and grouping (3, 42, 55) and a
/// window over an aggregate (98); only the tables they read are made and loaded: the run completes and every engine's answers are compared. Needs
/// `tpcgen-cli` (scripts/install-peers installs it); skips without it, and without
/// the shared material.
#[test]
fn tpcds_runs_a_few_queries_and_compares_the_answers() {
    if beedb_lab::workload::tpcds::find_material().is_err() {
        println!("note: shared/tpcds not found (set BEEDB_TPCDS_DIR); skipped");
        return;
    }
    if beedb_lab::workload::tpcds::installed_generator().is_none() {
        println!("note: tpcgen-cli is not installed (scripts/install-peers installs it); skipped");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let queries = "3,42,55,98";
    let mut a = args(&["tpcds", "--sf", "0.01", "--queries", queries, "--runs", "1"], out.path());
    a.engines = Some(vec!["beedb".into(), "beedb-generic".into()]);
    let ok = run(&a).unwrap();
    let json = saved_json(out.path(), "tpcds");
    assert!(ok, "every answer verifies: {:#}", json["notes"]);
    assert_eq!(json["parameters"]["sf"], "0.01");
    let results = json["results"].as_array().unwrap();
    let count = queries.split(',').count();
    assert_eq!(results.len(), count * 2, "{json}");
    for r in results {
        assert_eq!(r["verified"], true, "{r}");
    }
    // The status table and the counts (every query ok on both engines).
    let sections = json["sections"].as_array().unwrap();
    assert_eq!(sections[0]["rows"].as_array().unwrap().len(), count, "{sections:?}");
    for row in sections[1]["rows"].as_array().unwrap() {
        assert_eq!(row[1], count.to_string(), "{row}");
    }
    // A second run reuses the generated tables.
    let data = out.path().join("data/tpcds-sf0.01");
    assert!(data.join("store_sales.tbl").is_file() && !data.join("customer_demographics.tbl").exists());
    assert!(run(&args(&["tpcds", "--queries", "100"], out.path())).unwrap_err().contains("no TPC-DS query 100"));
}

#[test]
fn bad_arguments_are_errors_not_panics() {
    let out = tempfile::tempdir().unwrap();
    assert!(run(&args(&["wisconsin", "--n", "10"], out.path())).is_err());
    assert!(run(&args(&["tp1", "--configs", "nope"], out.path())).is_err());
    assert!(run(&args(&["tpcc", "--warehouses", "0"], out.path())).is_err());
    assert!(run(&args(&["tpcc", "--scale", "2"], out.path())).is_err());
    assert!(Args::try_parse_from(["beedb bench", "nosuchworkload"]).is_err());
    assert!(run(&args(&["tpch", "--queries", "23"], out.path())).unwrap_err().contains("no TPC-H query 23"));
    assert!(run(&args(&["tpch", "--threads", "0"], out.path())).is_err());
    let mut a = args(&["wisconsin"], out.path());
    a.engines = Some(vec!["oracle".into()]);
    assert!(run(&a).unwrap_err().contains("unknown engine"));
}

/// The optimizer workload at N = 1000: every chosen and forced plan runs and gives
/// the same answer, the forced settings give the plans they name, and the verdict
/// tables are there (times at this size are noise: no ratio is asserted).
#[test]
fn optimizer_times_chosen_and_forced_plans() {
    let out = tempfile::tempdir().unwrap();
    let ok = run(&args(&["optimizer", "--n", "1000", "--runs", "1"], out.path())).unwrap();
    assert!(ok, "every answer verifies");
    let json = saved_json(out.path(), "optimizer");
    assert_eq!(json["workload"], "optimizer");
    let results = json["results"].as_array().unwrap();
    let items: Vec<&str> = results.iter().map(|r| r["item"].as_str().unwrap()).collect();
    for want in ["scan X=1", "scan X=9 [seq scan]", "scan X=9 [index scan]", "j1 [hash join]", "j2 [index nested loop]", "j4 [nested loop]", "j6"] {
        assert!(items.contains(&want), "{want} in {items:?}");
    }
    assert!(results.iter().all(|r| r["verified"] == true), "{json}");
    // No forced setting gave another plan than the one it names.
    let notes = json["notes"].as_array().unwrap();
    assert!(!notes.iter().any(|n| n.as_str().unwrap().contains("the settings gave")), "{notes:?}");
    let sections = json["sections"].as_array().unwrap();
    assert_eq!(sections.len(), 3);
    // Test 1: a row per X per BeeDB engine; test 2: per query; test 3: four ranges,
    // BeeDB's estimates within a factor of 2 (about 1 and about 500 rows).
    assert_eq!(sections[0]["rows"].as_array().unwrap().len(), 9 * 2);
    assert_eq!(sections[1]["rows"].as_array().unwrap().len(), 6 * 2);
    let ranges = sections[2]["rows"].as_array().unwrap();
    assert_eq!(ranges.len(), 4);
    for r in ranges {
        let estimate = r[3].as_str().unwrap();
        assert!(!estimate.contains("off") && estimate.parse::<f64>().is_ok(), "{r}");
    }
    assert_eq!(ranges[0][2], "1");
    assert_eq!(ranges[1][2], "500");
}
