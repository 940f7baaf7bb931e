//! The bee cache seen from SQL: relation bees of a database written by an earlier
//! process, bees retired with their relation or statement, the code-memory bound,
//! and the switches.

use std::process::Command;

use beedb::{Connection, Database, Value};

/// `(kind, owner, maker)` of the live bees, sorted.
fn bees(conn: &mut Connection, owner_like: &str) -> Vec<(String, String, String)> {
    let r = conn
        .query(
            "SELECT kind, owner, maker FROM beedb_bees WHERE owner LIKE $1 ORDER BY kind, owner",
            &[Value::Text(owner_like.into())],
        )
        .unwrap();
    r.rows
        .iter()
        .map(|row| (row.get(0).unwrap(), row.get(1).unwrap(), row.get(2).unwrap()))
        .collect()
}

fn ids(conn: &mut Connection, owner: &str) -> Vec<i64> {
    conn.query(
        "SELECT id FROM beedb_bees WHERE owner = $1 ORDER BY id",
        &[Value::Text(owner.into())],
    )
    .unwrap()
    .rows
    .iter()
    .map(|r| r.get(0).unwrap())
    .collect()
}

#[test]
fn database_written_by_another_process_has_its_relation_bees_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("earlier.beedb");
    // An earlier session: the shell, in its own process.
    let out = Command::new(env!("CARGO_BIN_EXE_beedb"))
        .arg(&path)
        .arg("-c")
        .arg(
            "CREATE TABLE orders (o_orderkey INTEGER PRIMARY KEY, o_comment VARCHAR(79), o_total NUMERIC(12,2));
             CREATE TABLE nation (n_nationkey INTEGER, n_name CHAR(25));
             INSERT INTO orders VALUES (1, 'first', 10.50), (2, NULL, 3.25), (3, 'third', NULL);
             INSERT INTO nation VALUES (0, 'ALGERIA'), (1, 'ARGENTINA');",
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let db = Database::open(&path).unwrap();
    let mut conn = db.connect();
    // Before any statement touches them, both relations have their bees again.
    assert_eq!(
        bees(&mut conn, "relation %"),
        vec![
            ("deform".into(), "relation nation".into(), "instantiated".into()),
            ("deform".into(), "relation orders".into(), "instantiated".into()),
            ("form".into(), "relation nation".into(), "instantiated".into()),
            ("form".into(), "relation orders".into(), "instantiated".into()),
        ]
    );
    let before = ids(&mut conn, "relation orders");
    let r = conn
        .query("SELECT o_comment FROM orders ORDER BY o_orderkey", &[])
        .unwrap();
    let got: Vec<Option<String>> = r.rows.iter().map(|r| r.get(0).unwrap()).collect();
    assert_eq!(got, vec![Some("first".into()), None, Some("third".into())]);
    // The scan used the bees made at open (no new relation bees).
    assert_eq!(ids(&mut conn, "relation orders"), before);
    let calls: i64 = conn
        .query(
            "SELECT invocations FROM beedb_bees WHERE owner = 'relation orders' AND kind = 'deform'",
            &[],
        )
        .unwrap()
        .rows[0]
        .get(0)
        .unwrap();
    assert!(calls >= 1);
}

#[test]
fn dropping_or_altering_a_relation_retires_its_bees() {
    let db = Database::open(":memory:").unwrap();
    let mut conn = db.connect();
    // Made by CREATE TABLE itself, before any statement uses the table.
    conn.execute("CREATE TABLE t (a INTEGER, b TEXT)", &[]).unwrap();
    let first = ids(&mut conn, "relation t");
    assert_eq!(first.len(), 2);
    conn.execute("INSERT INTO t VALUES (1, 'x')", &[]).unwrap();
    assert_eq!(ids(&mut conn, "relation t"), first);
    // ALTER TABLE makes the new layout's bees and retires the old ones.
    conn.execute("ALTER TABLE t ADD COLUMN c INTEGER", &[]).unwrap();
    let second = ids(&mut conn, "relation t");
    assert_eq!(second.len(), 2);
    assert!(second.iter().all(|id| !first.contains(id)), "{first:?} {second:?}");
    // A rolled-back drop keeps them; a committed one retires them.
    conn.execute_batch("BEGIN; DROP TABLE t; ROLLBACK").unwrap();
    conn.execute("SELECT * FROM t", &[]).unwrap();
    assert_eq!(ids(&mut conn, "relation t").len(), 2);
    conn.execute("DROP TABLE t", &[]).unwrap();
    assert!(ids(&mut conn, "relation t").is_empty());
}

#[test]
fn a_prepared_statement_keeps_its_scan_bee_until_dropped() {
    let db = Database::open(":memory:").unwrap();
    let mut conn = db.connect();
    conn.execute_batch(
        "CREATE TABLE t (a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, 'z')",
    )
    .unwrap();
    let stmt = conn.prepare("SELECT b FROM t WHERE a >= $1").unwrap();
    let r = stmt.execute(&mut conn, &[Value::Integer(2)]).unwrap();
    assert_eq!(r.rows.len(), 2);
    let owners: Vec<(String, String, String)> = bees(&mut conn, "statement %");
    assert_eq!(owners.len(), 1, "{owners:?}");
    assert_eq!(owners[0].0, "scan");
    let owner = owners[0].1.clone();
    let id = ids(&mut conn, &owner);
    // The same parameter value: the same bee, called again.
    stmt.execute(&mut conn, &[Value::Integer(2)]).unwrap();
    assert_eq!(ids(&mut conn, &owner), id);
    let calls: i64 = conn
        .query(
            "SELECT invocations FROM beedb_bees WHERE id = $1",
            &[Value::BigInt(id[0])],
        )
        .unwrap()
        .rows[0]
        .get(0)
        .unwrap();
    assert_eq!(calls, 2);
    drop(stmt);
    assert!(bees(&mut conn, "statement %").is_empty());
}

#[test]
fn a_statement_run_with_many_parameter_values_keeps_a_bounded_number_of_bees() {
    let db = Database::open(":memory:").unwrap();
    let mut conn = db.connect();
    let values: Vec<String> = (1..=100).map(|x| format!("({x}, 'v')")).collect();
    conn.execute_batch(&format!("CREATE TABLE t (a INTEGER, b TEXT); INSERT INTO t VALUES {}", values.join(", ")))
        .unwrap();
    let stmt = conn.prepare("SELECT b FROM t WHERE a >= $1").unwrap();
    for v in 0..100 {
        let r = stmt.execute(&mut conn, &[Value::Integer(v)]).unwrap();
        assert_eq!(r.rows.len(), (100 - v.max(1) + 1) as usize);
    }
    let live = bees(&mut conn, "statement %").len();
    assert!((1..=16).contains(&live), "{live} scan bees kept for one statement");
}

#[test]
fn a_unique_index_lookup_gets_no_scan_bee() {
    let db = Database::open(":memory:").unwrap();
    let mut conn = db.connect();
    let values: Vec<String> = (1..=1000).map(|x| format!("({x}, {x})")).collect();
    conn.execute_batch(&format!("CREATE TABLE k (id INTEGER PRIMARY KEY, v INTEGER); INSERT INTO k VALUES {}", values.join(", ")))
        .unwrap();
    let plan = conn.query("EXPLAIN SELECT v FROM k WHERE id = 7", &[]).unwrap();
    let text: Vec<String> = plan.rows.iter().map(|r| r.get::<String>(0).unwrap()).collect();
    let text = text.join("\n");
    assert!(text.contains("Index Scan") && !text.contains("Bee: scan"), "{text}");
    assert_eq!(conn.query("SELECT v FROM k WHERE id = 7", &[]).unwrap().rows[0].get::<i32>(0).unwrap(), 7);
}

/// An index scan a Limit stops after a row or a few (MIN/MAX, ORDER BY … LIMIT
/// through an index) reads too few tuples to pay for a scan bee.
#[test]
fn an_index_scan_under_a_small_limit_gets_no_scan_bee() {
    let db = Database::open(":memory:").unwrap();
    let mut conn = db.connect();
    conn.execute_batch(
        "CREATE TABLE k (id INTEGER PRIMARY KEY, v INTEGER);
         INSERT INTO k SELECT x, x % 7 FROM generate_series(1, 60000) s(x);
         SELECT count(*) FROM k WHERE v > 3",
    )
    .unwrap();
    for sql in ["SELECT min(id) FROM k WHERE v > 3", "SELECT id FROM k WHERE v > 3 ORDER BY id DESC LIMIT 5"] {
        let plan = conn.query(&format!("EXPLAIN {sql}"), &[]).unwrap();
        let text: Vec<String> = plan.rows.iter().map(|r| r.get::<String>(0).unwrap()).collect();
        let text = text.join("\n");
        assert!(text.contains("Index Scan") && !text.contains("Bee: scan"), "{sql}\n{text}");
    }
    assert_eq!(conn.query("SELECT min(id) FROM k WHERE v > 3", &[]).unwrap().rows[0].get::<i32>(0).unwrap(), 4);
}

#[test]
fn switches_and_code_limit() {
    let db = Database::open(":memory:").unwrap();
    let mut conn = db.connect();
    conn.execute_batch(
        "CREATE TABLE t (a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, 'z')",
    )
    .unwrap();
    // Off: no query bee is made.
    conn.execute("SET bees = off", &[]).unwrap();
    conn.execute("SELECT b FROM t WHERE a > 1", &[]).unwrap();
    assert!(bees(&mut conn, "query").is_empty());
    conn.execute("SET bees = on", &[]).unwrap();

    // Forced compiled, but no code memory allowed: the cache instantiates instead and
    // says why; results are the same.
    conn.execute("SET bee_maker = compiled", &[]).unwrap();
    conn.execute("SET bee_code_limit = '0'", &[]).unwrap();
    let r = conn.query("SELECT b FROM t WHERE a > 1 ORDER BY b", &[]).unwrap();
    assert_eq!(r.rows.len(), 2);
    let rows = conn
        .query(
            "SELECT maker, reason, code_bytes FROM beedb_bees WHERE kind = 'scan'",
            &[],
        )
        .unwrap();
    assert_eq!(rows.rows.len(), 1);
    let maker: String = rows.rows[0].get(0).unwrap();
    let reason: String = rows.rows[0].get(1).unwrap();
    assert_eq!(maker, "instantiated");
    assert!(
        reason.contains("code limit") || reason.contains("compiler unavailable"),
        "{reason}"
    );
    let total: i64 = conn
        .query("SELECT count(*) FROM beedb_bees WHERE code_bytes > 0", &[])
        .unwrap()
        .rows[0]
        .get(0)
        .unwrap();
    assert_eq!(total, 0);
    let shown: String = conn.query("SHOW bee_code_limit", &[]).unwrap().rows[0].get(0).unwrap();
    assert_eq!(shown, "0B");
}
