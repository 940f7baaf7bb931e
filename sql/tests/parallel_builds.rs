//! The joins along a parallel pipeline build their right sides in the order, and
//! only as far, as the serial path does (issue 16). Found by the 3-path differential
//! fuzz (`tests/fuzz.rs`, seed 20261128, schema seed 20261188784568, statement 132):
//! 0 rows on 1 thread, 22012 (division by zero) on 2 threads, with the same plan.
//!
//! The plan: a semi join (its right side empty) over a nested loop whose left is a
//! heap scan and whose right a derived table dividing by a column that holds 0. One
//! thread builds the semi join's right side, finds it empty, and never runs its left
//! input, so the derived table is never evaluated. Two threads built every join's
//! right side of the pipeline before starting (`exec/parallel.rs`,
//! `run_pipeline_with`), the derived table's included, and met the division by zero.
//! PostgreSQL 15 plans this query differently (the aggregate is its nested loop's
//! outer side) and reports the division by zero: which rows an expression meets is the
//! plan's choice; with the same plan, 1 and 2 threads must meet the same rows.

use beedb_sql::{Connection, Database};

const QUERY: &str = "SELECT s.n, count(*) FROM a, (SELECT count(*) AS n FROM z WHERE z.id / z.id = 1) s \
                     WHERE a.id IN (SELECT x FROM b WHERE b.c1 = a.c1 AND b.x > 5 AND s.n > 0) GROUP BY s.n";

fn db(threads: usize) -> (Database, Connection) {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE a (id INTEGER, c1 INTEGER);
         INSERT INTO a SELECT i, i FROM generate_series(1, 20) g(i);
         CREATE TABLE z (id INTEGER);
         INSERT INTO z SELECT i FROM generate_series(0, 600) g(i);
         CREATE TABLE b (x INTEGER, c1 INTEGER);
         INSERT INTO b VALUES (1, 1);
         ANALYZE a; ANALYZE z; ANALYZE b",
    )
    .unwrap();
    c.execute_batch(&format!("SET threads = {threads}; SET parallel_min_rows = 0")).unwrap();
    (db, c)
}

fn plan(c: &mut Connection) -> String {
    let r = c.query(&format!("EXPLAIN {QUERY}"), &[]).unwrap();
    r.rows.iter().map(|r| r.get::<String>(0).unwrap()).collect::<Vec<_>>().join("\n")
}

#[test]
fn an_empty_semi_join_build_stops_the_builds_below_it_on_2_threads() {
    for threads in [1, 2] {
        let (_db, mut c) = db(threads);
        let p = plan(&mut c);
        // The shape the fuzz found: the semi join's probe side is a nested loop over
        // a heap scan, its right side the dividing aggregate.
        let semi = p.find("Hash Semi Join").unwrap_or_else(|| panic!("{p}"));
        let nested = p.find("Nested Loop").unwrap_or_else(|| panic!("{p}"));
        let divide = p.find("Filter: ((id / id) = 1)").unwrap_or_else(|| panic!("{p}"));
        assert!(semi < nested && nested < divide, "{p}");
        if threads == 2 {
            assert!(p.contains("Build Workers: 2"), "not parallel: {p}");
        }
        let r = c.query(QUERY, &[]).unwrap_or_else(|e| panic!("{threads} threads: {e}\n{p}"));
        assert_eq!(r.rows.len(), 0, "{threads} threads");
    }
}

/// The control: with a row in `b` that the semi join keeps, every path runs the
/// derived table and reports the division by zero.
#[test]
fn a_non_empty_semi_join_build_still_runs_the_builds_below_it() {
    for threads in [1, 2] {
        let (_db, mut c) = db(threads);
        c.execute_batch("INSERT INTO b VALUES (7, 7)").unwrap();
        let e = c.query(QUERY, &[]).expect_err("division by zero");
        assert_eq!(e.sqlstate, "22012", "{threads} threads: {e}");
    }
}
