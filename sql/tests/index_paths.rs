//! Differential tests of the plans that read through an index against the plain ones,
//! each rule on vs off, bees on and off, in a read transaction and inside a write
//! transaction that changed the indexes, over random tables of every key type with
//! NULLs, duplicates, empty and long strings:
//! - `optimizer_index_order` (ORDER BY … LIMIT … OFFSET and MIN/MAX through an index)
//!   against sorting and aggregating. Only the key columns are compared (rows tied on
//!   the keys may come in any order), so each answer is exact.
//! - `optimizer_index_join` (index nested-loop joins) against hash joins: inner, left,
//!   semi and anti joins with filters and extra conditions, compared as sorted rows.

use beedb_sql::{Connection, Database};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A column type and a generator of SQL literals for it (`None` = NULL).
struct KeyType {
    sql: &'static str,
    literal: fn(&mut StdRng) -> String,
}

const TYPES: &[KeyType] = &[
    KeyType { sql: "INTEGER", literal: |r| r.random_range(-50..50).to_string() },
    KeyType { sql: "BIGINT", literal: |r| (r.random_range(-5i64..5) * 1_000_000_000_000).to_string() },
    KeyType { sql: "DOUBLE PRECISION", literal: |r| format!("{}", r.random_range(-20..20) as f64 / 4.0) },
    KeyType { sql: "NUMERIC(10,2)", literal: |r| format!("{}.{:02}", r.random_range(-30..30), r.random_range(0..100)) },
    KeyType {
        sql: "TEXT",
        literal: |r| {
            let len = match r.random_range(0..10) {
                0 => 0,
                1 => 300,
                _ => r.random_range(1..4),
            };
            let s: String = (0..len).map(|_| ['a', 'B', 'b', 'é', ' '][r.random_range(0..5)]).collect();
            format!("'{s}'")
        },
    },
    KeyType { sql: "DATE", literal: |r| format!("DATE '2020-01-01' + {}", r.random_range(0..40)) },
    KeyType { sql: "BOOLEAN", literal: |r| if r.random_bool(0.5) { "true".into() } else { "false".into() } },
];

fn value(r: &mut StdRng, ty: &KeyType, null_share: f64) -> String {
    if r.random_bool(null_share) { "NULL".into() } else { (ty.literal)(r) }
}

fn rows_of(c: &mut Connection, sql: &str) -> Vec<String> {
    let res = c.query(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}"));
    res.rows.iter().map(|r| r.0.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("|")).collect()
}

/// The query's answer with `rule` on, and with it off.
fn both(c: &mut Connection, rule: &str, sql: &str) -> (Vec<String>, Vec<String>) {
    c.execute(&format!("SET {rule} = on"), &[]).unwrap();
    let on = rows_of(c, sql);
    c.execute(&format!("SET {rule} = off"), &[]).unwrap();
    let off = rows_of(c, sql);
    c.execute(&format!("RESET {rule}"), &[]).unwrap();
    (on, off)
}

fn random_query(r: &mut StdRng, key: &str, other: &str, a_ty: &KeyType) -> String {
    let filter = match r.random_range(0..5) {
        0 => String::new(),
        1 => format!(" WHERE {key} > {}", (a_ty.literal)(r)),
        2 => format!(" WHERE {key} <= {}", (a_ty.literal)(r)),
        3 => format!(" WHERE g = {}", r.random_range(0..4)),
        _ => format!(" WHERE {other} IS NOT NULL AND g <> {}", r.random_range(0..4)),
    };
    // min/max of boolean do not exist (bool_and/bool_or do): order queries only.
    let first = if a_ty.sql == "BOOLEAN" { 2 } else { 0 };
    match r.random_range(first..4) {
        0 => format!("SELECT min({key}) FROM t{filter}"),
        1 => format!("SELECT max({key}) FROM t{filter}"),
        2 => {
            let dir = if r.random_bool(0.5) { "DESC" } else { "" };
            let limit = [0, 1, 2, 7, 64, 65, 1023, 1024, 1025, 5000][r.random_range(0..10)];
            let offset = [0, 0, 1, 100][r.random_range(0..4)];
            format!("SELECT {key} FROM t{filter} ORDER BY {key} {dir} LIMIT {limit} OFFSET {offset}")
        }
        _ => {
            let dir = if r.random_bool(0.5) { "DESC" } else { "" };
            let g = r.random_range(0..4);
            format!("SELECT {key} FROM t WHERE g = {g} ORDER BY g, {key} {dir} LIMIT {}", r.random_range(1..3000))
        }
    }
}

#[test]
fn index_order_matches_sorting() {
    let seed: u64 = std::env::var("BEEDB_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(20261126);
    let mut r = StdRng::seed_from_u64(seed);
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    for (round, a_ty) in TYPES.iter().enumerate() {
        let b_ty = &TYPES[r.random_range(0..TYPES.len())];
        let n = [0usize, 1, 1023, 1025, 3000][round % 5];
        let null_share = [0.0, 0.1, 0.5][round % 3];
        c.execute_batch(&format!(
            "DROP TABLE IF EXISTS t; CREATE TABLE t (a {}, b {}, g INTEGER, pad TEXT)",
            a_ty.sql, b_ty.sql
        ))
        .unwrap();
        let mut values = Vec::new();
        for i in 0..n {
            values.push(format!(
                "({}, {}, {}, 'p{i}')",
                value(&mut r, a_ty, null_share),
                value(&mut r, b_ty, null_share),
                r.random_range(0..4)
            ));
            if values.len() == 500 || i + 1 == n {
                c.execute(&format!("INSERT INTO t VALUES {}", values.join(", ")), &[]).unwrap();
                values.clear();
            }
        }
        c.execute_batch("CREATE INDEX t_a ON t (a); CREATE INDEX t_g_b ON t (g, b); ANALYZE t").unwrap();
        for bees in ["on", "off"] {
            c.execute(&format!("SET bees = {bees}"), &[]).unwrap();
            for q in 0..40 {
                // Inside a write transaction that changed the indexes, half the time.
                let in_txn = q % 2 == 1;
                if in_txn {
                    c.execute_batch(&format!(
                        "BEGIN; INSERT INTO t SELECT a, b, g, pad FROM t WHERE g = {}; DELETE FROM t WHERE pad < 'p2'",
                        r.random_range(0..4)
                    ))
                    .unwrap();
                }
                let (key, other) = if r.random_bool(0.5) { ("a", "b") } else { ("b", "a") };
                let ty = if key == "a" { a_ty } else { b_ty };
                let sql = random_query(&mut r, key, other, ty);
                let (on, off) = both(&mut c, "optimizer_index_order", &sql);
                assert_eq!(on, off, "seed {seed}, {} / {}, bees {bees}: {sql}", a_ty.sql, b_ty.sql);
                if in_txn {
                    c.execute("ROLLBACK", &[]).unwrap();
                }
            }
        }
        c.execute("RESET bees", &[]).unwrap();
    }
}

/// The rule is taken where it should be: the plans the differential test compares
/// differ, or it would compare a sort with itself.
#[test]
fn index_order_is_used() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE t (a INTEGER, g INTEGER);
         INSERT INTO t SELECT x, x % 4 FROM generate_series(1, 5000) s(x);
         CREATE INDEX t_a ON t (a); ANALYZE t",
    )
    .unwrap();
    let plan = |c: &mut Connection, sql: &str| rows_of(c, &format!("EXPLAIN (COSTS OFF) {sql}")).join("\n");
    let p = plan(&mut c, "SELECT a FROM t ORDER BY a DESC LIMIT 10");
    assert!(p.contains("Index Scan Backward using t_a") && !p.contains("Sort"), "{p}");
    let p = plan(&mut c, "SELECT min(a) FROM t");
    assert!(p.contains("Limit") && p.contains("Index Scan using t_a"), "{p}");
    c.execute("SET optimizer_index_order = off", &[]).unwrap();
    let p = plan(&mut c, "SELECT a FROM t ORDER BY a DESC LIMIT 10");
    assert!(p.contains("Sort"), "{p}");
}

fn random_join(r: &mut StdRng, key_ty: &KeyType) -> String {
    // Half the joins are on `u`, unique in `i`: those an index join serves best.
    let key = if r.random_bool(0.5) { "u" } else { "k" };
    let filter = match r.random_range(0..4) {
        0 => String::new(),
        1 => " AND i.g <> 1".to_string(),
        2 => format!(" AND i.k > {}", (key_ty.literal)(r)),
        _ => " AND i.pad <> o.pad".to_string(),
    };
    match r.random_range(0..6) {
        0 => format!("SELECT o.id, i.k, i.g FROM o JOIN i ON i.{key} = o.{key}{filter}"),
        1 => format!("SELECT i.k, o.id, i.pad FROM i JOIN o ON o.{key} = i.{key}{filter}"),
        2 => format!("SELECT o.id, i.g, i.pad FROM o LEFT JOIN i ON i.{key} = o.{key}{filter}"),
        3 => format!("SELECT o.id FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.{key} = o.{key}{filter})"),
        4 => format!("SELECT o.id FROM o WHERE NOT EXISTS (SELECT 1 FROM i WHERE i.{key} = o.{key}{filter})"),
        _ => format!("SELECT o.id, i.pad FROM o JOIN i ON i.{key} = o.{key} AND i.g = o.g"),
    }
}

#[test]
fn index_joins_match_hash_joins() {
    let seed: u64 = std::env::var("BEEDB_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(20261127);
    let mut r = StdRng::seed_from_u64(seed);
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    let mut used = 0;
    for (round, ty) in TYPES.iter().enumerate() {
        let inner_rows = [0usize, 1, 1023, 1025, 3000][round % 5];
        let outer_rows = [0usize, 5, 40][round % 3];
        c.execute_batch(&format!(
            "DROP TABLE IF EXISTS i; DROP TABLE IF EXISTS o;
             CREATE TABLE i (k {0}, g INTEGER, pad TEXT, u INTEGER);
             CREATE TABLE o (id INTEGER, k {0}, g INTEGER, pad TEXT, u INTEGER)",
            ty.sql
        ))
        .unwrap();
        for (table, n, null_share) in [("i", inner_rows, 0.1), ("o", outer_rows, 0.2)] {
            let mut values = Vec::new();
            for id in 0..n {
                let k = value(&mut r, ty, null_share);
                let g = r.random_range(0..3);
                let pad = format!("'p{}'", r.random_range(0..5));
                // `u`: distinct in `i`; in `o`, a value `i` may hold, or NULL.
                let u = if table == "i" {
                    ((id * 7919) % n).to_string()
                } else {
                    value(&mut r, &KeyType { sql: "INTEGER", literal: |r| r.random_range(0..4000).to_string() }, 0.1)
                };
                values.push(if table == "i" {
                    format!("({k}, {g}, {pad}, {u})")
                } else {
                    format!("({id}, {k}, {g}, {pad}, {u})")
                });
                if values.len() == 500 || id + 1 == n {
                    c.execute(&format!("INSERT INTO {table} VALUES {}", values.join(", ")), &[]).unwrap();
                    values.clear();
                }
            }
        }
        let index = if r.random_bool(0.5) { "CREATE INDEX i_k ON i (k)" } else { "CREATE INDEX i_k_g ON i (k, g)" };
        c.execute_batch(&format!("{index}; CREATE INDEX i_u ON i (u); ANALYZE i; ANALYZE o")).unwrap();
        for bees in ["on", "off"] {
            c.execute(&format!("SET bees = {bees}"), &[]).unwrap();
            for q in 0..30 {
                let in_txn = q % 3 == 2;
                if in_txn {
                    c.execute_batch("BEGIN; INSERT INTO i SELECT k, g + 1, pad, u FROM i WHERE g = 0; DELETE FROM i WHERE pad = 'p1'")
                        .unwrap();
                }
                let sql = random_join(&mut r, ty);
                let plan = rows_of(&mut c, &format!("EXPLAIN {sql}")).join("\n");
                used += usize::from(plan.contains("Index Nested Loop"));
                let (mut on, mut off) = both(&mut c, "optimizer_index_join", &sql);
                on.sort();
                off.sort();
                assert_eq!(on, off, "seed {seed}, {}, bees {bees}: {sql}\n{plan}", ty.sql);
                if in_txn {
                    c.execute("ROLLBACK", &[]).unwrap();
                }
            }
        }
        c.execute("RESET bees", &[]).unwrap();
    }
    // The rule must have been taken, or this compared hash joins with themselves.
    assert!(used > 50, "index joins chosen {used} times");
}

/// Index scans return from a single row to several batches: a scan starts with a
/// batch sized for what it expects (one row for a unique key, 64 otherwise) and grows
/// it, with its bee's buffers, as it proves longer. Every length around those sizes
/// and the batch size must give the rows the generic path gives, with scan bees
/// (pushed filters) made by either maker, through a prepared statement run with one
/// value after another (its plan, and its bees when they do not depend on the value,
/// kept between executions) and through literal SQL.
#[test]
fn index_scans_of_every_length_agree_with_bees_off() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE t (k INTEGER, x INTEGER, s TEXT, d NUMERIC(10,2), u INTEGER UNIQUE);
         CREATE INDEX t_k ON t (k);
         INSERT INTO t SELECT 100000 + g, g % 7, 'filler', g, g FROM generate_series(1, 60000) g;",
    )
    .unwrap();
    let counts = [0usize, 1, 2, 63, 64, 65, 255, 256, 257, 1023, 1024, 1025, 1500, 4200];
    for (v, &n) in counts.iter().enumerate() {
        if n > 0 {
            c.execute(
                &format!(
                    "INSERT INTO t SELECT {v}, CASE WHEN g % 11 = 0 THEN NULL ELSE g % 5 END,
                            CASE g % 3 WHEN 0 THEN '' WHEN 1 THEN repeat('x', g % 300) END,
                            CASE WHEN g % 13 = 0 THEN NULL ELSE g * 1.25 END, NULL
                     FROM generate_series(1, {n}) g"
                ),
                &[],
            )
            .unwrap();
        }
    }
    c.execute("ANALYZE t", &[]).unwrap();
    let plan = rows_of(&mut c, "EXPLAIN SELECT * FROM t WHERE k = 9 AND x <> 3").join("\n");
    assert!(plan.contains("Index Scan"), "the test must read through the index:\n{plan}");
    let queries = [
        "SELECT k, x, s, d FROM t WHERE k = $1 AND x <> 3",
        "SELECT k, x, s, d FROM t WHERE k = $1",
        "SELECT k, x, d FROM t WHERE k = $1 AND d > 10 LIMIT 700",
        "SELECT u, x FROM t WHERE u = $1 + 40000",
    ];
    for sql in queries {
        let mut answers: Vec<Vec<Vec<String>>> = Vec::new();
        for (bees, maker) in [("off", "auto"), ("on", "auto"), ("on", "compiled"), ("on", "instantiated")] {
            c.execute(&format!("SET bees = {bees}"), &[]).unwrap();
            c.execute(&format!("SET bee_maker = {maker}"), &[]).unwrap();
            let prepared = c.prepare(sql).unwrap();
            let mut per_value = Vec::new();
            for v in 0..counts.len() {
                let param = beedb_sql::Value::Integer(v as i32);
                let res = prepared.execute(&mut c, std::slice::from_ref(&param)).unwrap();
                let mut rows: Vec<String> =
                    res.rows.iter().map(|r| r.0.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("|")).collect();
                rows.sort();
                let mut literal = rows_of(&mut c, &sql.replace("$1", &v.to_string()));
                literal.sort();
                assert_eq!(rows, literal, "{sql} with {v}: prepared vs literal, bees {bees} maker {maker}");
                per_value.push(rows);
            }
            answers.push(per_value);
        }
        for (i, a) in answers.iter().enumerate().skip(1) {
            for (v, rows) in a.iter().enumerate() {
                assert_eq!(rows, &answers[0][v], "{sql} with {v}: configuration {i} vs bees off");
            }
        }
        // A LIMIT caps the answer; without one every row of the key comes back.
        if !sql.contains("LIMIT") && !sql.contains("u =") && !sql.contains("<>") {
            for (v, &n) in counts.iter().enumerate() {
                assert_eq!(answers[0][v].len(), n, "{sql} with {v}");
            }
        }
    }
}

/// `column IN (…)` and ORs of equalities read through an index key by key
/// (`optimizer_index_access`) against the same filter over the heap: random tables of
/// every key type with NULLs and duplicates, lists with duplicates, NULLs and values
/// no row has, on one column and after an equality on a two-column index, through
/// literals and through a prepared statement's parameters (which may repeat).
#[test]
fn in_lists_through_an_index_match_the_heap_scan() {
    let mut r = StdRng::seed_from_u64(0x1d5);
    let mut used_index = 0;
    for ty in TYPES {
        let db = Database::open(":memory:").unwrap();
        let mut c = db.connect();
        c.execute(&format!("CREATE TABLE t (a {}, b INTEGER, pad TEXT)", ty.sql), &[]).unwrap();
        let mut values = Vec::new();
        for i in 0..1500 {
            values.push(format!("({}, {}, 'p{i}')", value(&mut r, ty, 0.05), r.random_range(0..4)));
        }
        c.execute(&format!("INSERT INTO t VALUES {}", values.join(", ")), &[]).unwrap();
        c.execute_batch("CREATE INDEX t_a ON t (a); CREATE INDEX t_b_a ON t (b, a); ANALYZE t").unwrap();
        for q in 0..40 {
            let n = r.random_range(1..6);
            let list: Vec<String> = (0..n).map(|_| value(&mut r, ty, 0.1)).collect();
            let sql = match q % 4 {
                0 => format!("SELECT a, b, pad FROM t WHERE a IN ({})", list.join(", ")),
                1 => format!("SELECT a, b, pad FROM t WHERE {}", list.iter().map(|v| format!("a = {v}")).collect::<Vec<_>>().join(" OR ")),
                2 => format!("SELECT a, b, pad FROM t WHERE b = {} AND a IN ({})", r.random_range(0..4), list.join(", ")),
                _ => format!("SELECT a, b, pad FROM t WHERE a IN ({}) ORDER BY a DESC LIMIT 3", list.join(", ")),
            };
            let plan = rows_of(&mut c, &format!("EXPLAIN {sql}")).join("\n");
            used_index += usize::from(plan.contains("= ANY ("));
            let (mut on, mut off) = both(&mut c, "optimizer_index_access", &sql);
            if q % 4 == 3 {
                // Rows tied on `a` may come in either order: compare the keys.
                let key = |rows: &[String]| rows.iter().map(|x| x.split('|').next().unwrap_or("").to_string()).collect::<Vec<_>>();
                assert_eq!(key(&on), key(&off), "{}: {sql}", ty.sql);
                continue;
            }
            on.sort();
            off.sort();
            assert_eq!(on, off, "{}: {sql}\n{plan}", ty.sql);
        }
        // Parameters: the plan is cached, the values change, and may repeat or be NULL.
        let prepared = c.prepare("SELECT a, b, pad FROM t WHERE a IN ($1, $2, $3)").unwrap();
        for _ in 0..10 {
            let vals: Vec<String> = (0..3).map(|_| value(&mut r, ty, 0.15)).collect();
            let params: Vec<beedb_sql::Value> = vals
                .iter()
                .map(|v| c.query(&format!("SELECT CAST({v} AS {})", ty.sql), &[]).unwrap().rows[0].0[0].clone())
                .collect();
            let res = prepared.execute(&mut c, &params).unwrap();
            let mut got: Vec<String> = res.rows.iter().map(|r| r.0.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("|")).collect();
            let mut want = rows_of(&mut c, &format!("SELECT a, b, pad FROM t WHERE a IN ({})", vals.join(", ")));
            got.sort();
            want.sort();
            assert_eq!(got, want, "{}: parameters {vals:?}", ty.sql);
        }
    }
    assert!(used_index > 100, "the index was used for only {used_index} of 280 queries");
}
