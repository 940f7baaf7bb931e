//! How the binder puts CTE plans at their references (`Binder::settle_ctes`): a
//! reference holds a placeholder while the query binds, and the CTE's plan is moved
//! or copied there once its WITH is bound. Each case compares a WITH query with the
//! same query written with derived tables (or with its known answer), across chains
//! mixing inlined and materialized CTEs, CTEs read from subqueries and from inner
//! WITHs, unread CTEs, volatile and correlated ones.

use beedb_sql::{Connection, Database, Value};

fn db() -> (Database, Connection) {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE t (x INTEGER, g INTEGER); \
         INSERT INTO t VALUES (1, 1), (2, 1), (3, 2), (4, 2), (5, 3); \
         CREATE SEQUENCE s",
    )
    .unwrap();
    (db, c)
}

fn rows(c: &mut Connection, sql: &str) -> Vec<Vec<Value>> {
    let r = c.query(sql, &[]).unwrap_or_else(|e| panic!("{e}: {sql}"));
    r.rows.into_iter().map(|r| r.0).collect()
}

fn plan(c: &mut Connection, sql: &str) -> String {
    rows(c, &format!("EXPLAIN (COSTS OFF) {sql}"))
        .into_iter()
        .map(|r| format!("{:?}\n", r[0]))
        .collect()
}

#[test]
fn with_queries_answer_as_their_derived_tables() {
    let (_db, mut c) = db();
    let cases = [
        // A chain read once at each step: inlined all along.
        (
            "WITH a AS (SELECT x FROM t), b AS (SELECT x + 1 AS x FROM a), c AS (SELECT x * 2 AS x FROM b) SELECT x FROM c ORDER BY x",
            "SELECT x FROM (SELECT x * 2 AS x FROM (SELECT x + 1 AS x FROM (SELECT x FROM t) a) b) c ORDER BY x",
        ),
        // The middle of the chain read twice (materialized), its input read once.
        (
            "WITH a AS (SELECT x, g FROM t WHERE x > 1), b AS (SELECT g, count(*) AS n FROM a GROUP BY g), \
             c AS (SELECT b1.g, b1.n + b2.n AS m FROM b AS b1 JOIN b AS b2 ON b1.g = b2.g) SELECT g, m FROM c ORDER BY g",
            "SELECT b1.g, b1.n + b2.n FROM (SELECT g, count(*) AS n FROM t WHERE x > 1 GROUP BY g) b1 \
             JOIN (SELECT g, count(*) AS n FROM t WHERE x > 1 GROUP BY g) b2 ON b1.g = b2.g ORDER BY g",
        ),
        // Read from subqueries of the query and of a later CTE.
        (
            "WITH a AS (SELECT x FROM t WHERE g = 2), b AS (SELECT x FROM t WHERE x IN (SELECT x + 1 FROM a)) \
             SELECT x, (SELECT max(x) FROM a) FROM b ORDER BY x",
            "SELECT x, (SELECT max(x) FROM t WHERE g = 2) FROM t WHERE x IN (SELECT x + 1 FROM t WHERE g = 2) ORDER BY x",
        ),
        // An inner WITH reading an outer CTE, itself read twice.
        (
            "WITH a AS (SELECT x, g FROM t), b AS (WITH c AS (SELECT g, sum(x) AS s FROM a GROUP BY g) \
             SELECT c1.g, c1.s FROM c AS c1 JOIN c AS c2 ON c1.g = c2.g) SELECT g, s FROM b ORDER BY g",
            "SELECT g, sum(x) FROM t GROUP BY g ORDER BY g",
        ),
        // Unread CTEs never run (the error would happen), also those only an unread CTE reads.
        (
            "WITH a AS (SELECT 1 / 0 AS z), b AS (SELECT x FROM t WHERE x IN (SELECT z FROM a)), c AS (SELECT x FROM t) \
             SELECT count(*) FROM c",
            "SELECT count(*) FROM t",
        ),
        // A CTE read from a correlated subquery, and a correlated CTE chain in one.
        (
            "WITH a AS (SELECT g, max(x) AS m FROM t GROUP BY g) \
             SELECT x, (SELECT m FROM a WHERE a.g = t.g) FROM t ORDER BY x",
            "SELECT x, (SELECT max(x) FROM t AS u WHERE u.g = t.g) FROM t ORDER BY x",
        ),
        (
            "SELECT x, (WITH a AS (SELECT u.x + t.x AS s FROM t AS u), b AS (SELECT s FROM a) \
             SELECT max(b1.s) FROM b AS b1, b AS b2) FROM t ORDER BY x",
            "SELECT x, x + 5 FROM t ORDER BY x",
        ),
        // A recursive CTE read by a later CTE and by the query.
        (
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 4), q AS (SELECT n * 10 AS m FROM r) \
             SELECT r.n, q.m FROM r JOIN q ON q.m = r.n * 10 ORDER BY 1",
            "SELECT n, n * 10 FROM (VALUES (1), (2), (3), (4)) v(n) ORDER BY 1",
        ),
        // Forced either way.
        (
            "WITH a AS MATERIALIZED (SELECT x FROM t), b AS NOT MATERIALIZED (SELECT x FROM a), c AS (SELECT x FROM b) \
             SELECT count(*), sum(c1.x) FROM c AS c1, c AS c2",
            "SELECT CAST(25 AS bigint), CAST(75 AS bigint)",
        ),
    ];
    for (with, derived) in cases {
        assert_eq!(rows(&mut c, with), rows(&mut c, derived), "{with}");
    }
}

/// A chain in which every CTE reads the one before twice: each is materialized and
/// run once, whatever the length.
#[test]
fn a_chain_of_materialized_ctes_runs_each_once() {
    let (_db, mut c) = db();
    let mut ctes = vec!["c0 AS (SELECT x FROM t)".to_string()];
    for i in 1..10 {
        ctes.push(format!("c{i} AS (SELECT x FROM c{p} UNION ALL SELECT x FROM c{p})", p = i - 1));
    }
    let sql = format!("WITH {} SELECT count(*), sum(x) FROM c9", ctes.join(", "));
    assert_eq!(rows(&mut c, &sql), vec![vec![Value::BigInt(5 * 512), Value::BigInt(15 * 512)]]);
}

/// A CTE calling a volatile function is materialized, and so is every CTE reading
/// it, however far down the chain: each reader sees the one value.
#[test]
fn volatility_passes_along_a_chain() {
    let (_db, mut c) = db();
    let sql = "WITH a AS (SELECT nextval('s') AS v), b AS (SELECT v FROM a), c AS (SELECT v + 0 AS v FROM b) SELECT v FROM c";
    let p = plan(&mut c, sql);
    for name in ["a", "b", "c"] {
        assert!(p.contains(&format!("CTE Scan on {name}")), "{name} is materialized:\n{p}");
    }
    assert_eq!(rows(&mut c, sql), vec![vec![Value::BigInt(1)]]);
    assert_eq!(rows(&mut c, "SELECT nextval('s')"), vec![vec![Value::BigInt(2)]]);
    // Without the volatile call the same chain is inlined.
    let p = plan(&mut c, "WITH a AS (SELECT 7 AS v), b AS (SELECT v FROM a), c AS (SELECT v + 0 AS v FROM b) SELECT v FROM c");
    assert!(!p.contains("CTE Scan"), "{p}");
}
