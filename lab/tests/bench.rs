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
fn bad_arguments_are_errors_not_panics() {
    let out = tempfile::tempdir().unwrap();
    assert!(run(&args(&["wisconsin", "--n", "10"], out.path())).is_err());
    assert!(run(&args(&["tp1", "--configs", "nope"], out.path())).is_err());
    assert!(Args::try_parse_from(["beedb bench", "nosuchworkload"]).is_err());
    let mut a = args(&["wisconsin"], out.path());
    a.engines = Some(vec!["oracle".into()]);
    assert!(run(&a).unwrap_err().contains("unknown engine"));
}
