//! Differential test of `optimizer_column_pruning`: random queries over tables of
//! every common type (NULLs, duplicates, empty and long strings) give the same rows
//! with the rule on and off, bees on and off. The queries read few of the columns
//! their FROM items offer, through every node the pass rewrites: scans with filters
//! on columns nobody selects, inner/outer/semi/anti joins with extra conditions,
//! aggregates over joins, windows, DISTINCT, set operations, ORDER BY a column not
//! selected, subqueries in the select list, grouping sets, and `count(*)` alone.

use beedb_sql::{Connection, Database};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn rows_of(c: &mut Connection, sql: &str) -> Result<Vec<String>, String> {
    let res = c.query(sql, &[]).map_err(|e| e.to_string())?;
    let mut rows: Vec<String> =
        res.rows.iter().map(|r| r.0.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("|")).collect();
    rows.sort();
    Ok(rows)
}

fn setup(r: &mut StdRng) -> Connection {
    let db = Database::open(":memory:").expect("open");
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE a (id INTEGER, k INTEGER, name TEXT, price NUMERIC(12,2), d DATE, flag BOOLEAN, x DOUBLE PRECISION);
         CREATE TABLE b (bid BIGINT, ak INTEGER, note VARCHAR(400), qty INTEGER, amount NUMERIC(12,2));
         CREATE TABLE e (k INTEGER, s TEXT);",
    )
    .expect("schema");
    let null = |r: &mut StdRng, v: String| if r.random_bool(0.1) { "NULL".to_string() } else { v };
    let text = |r: &mut StdRng| -> String {
        match r.random_range(0..8) {
            0 => "NULL".into(),
            1 => "''".into(),
            2 => format!("'{}'", "long".repeat(80)),
            _ => format!("'t{}'", r.random_range(0..6)),
        }
    };
    let mut rows = Vec::new();
    for i in 0..700 {
        let k = r.random_range(0..40).to_string();
        let name = text(r);
        let price = format!("{}.{:02}", r.random_range(-50..500), r.random_range(0..100));
        let d = format!("DATE '2024-01-01' + {}", r.random_range(0..60));
        let flag = r.random_bool(0.5).to_string();
        let x = format!("{}", r.random_range(-100..100) as f64 / 8.0);
        let (k, price, d, flag, x) = (null(r, k), null(r, price), null(r, d), null(r, flag), null(r, x));
        rows.push(format!("({i}, {k}, {name}, {price}, {d}, {flag}, {x})"));
    }
    c.execute(&format!("INSERT INTO a VALUES {}", rows.join(", ")), &[]).expect("a");
    rows.clear();
    for i in 0..1500 {
        let ak = r.random_range(0..50).to_string();
        let note = text(r);
        let qty = r.random_range(1..20).to_string();
        let amount = format!("{}.{:02}", r.random_range(0..900), r.random_range(0..100));
        let (ak, qty, amount) = (null(r, ak), null(r, qty), null(r, amount));
        rows.push(format!("({}, {ak}, {note}, {qty}, {amount})", i * 3));
    }
    c.execute(&format!("INSERT INTO b VALUES {}", rows.join(", ")), &[]).expect("b");
    c
}

fn random_query(r: &mut StdRng) -> String {
    let pick = |r: &mut StdRng, xs: &[&'static str]| xs[r.random_range(0..xs.len())];
    let a_filter = pick(r, &["", " AND a.flag", " AND a.x > 0", " AND a.name LIKE 't%'", " AND a.d < DATE '2024-02-01'"]);
    let b_filter = pick(r, &["", " AND b.qty > 5", " AND b.note IS NOT NULL", " AND b.amount < 400"]);
    let join = pick(r, &["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"]);
    match r.random_range(0..13) {
        0 => format!("SELECT count(*) FROM a {join} b ON a.k = b.ak{b_filter} WHERE true{a_filter}"),
        1 => format!("SELECT a.name, b.qty FROM a {join} b ON a.k = b.ak AND b.qty > a.id % 7 WHERE true{a_filter}"),
        2 => format!(
            "SELECT a.k, sum(b.amount), count(b.note), max(a.price), string_agg(a.name, ',' ORDER BY b.bid DESC, a.id) FROM a JOIN b ON a.k = b.ak{b_filter} WHERE true{a_filter} GROUP BY a.k"
        ),
        3 => format!("SELECT a.id FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.ak = a.k{b_filter}){a_filter}"),
        4 => format!("SELECT a.name, a.d FROM a WHERE NOT EXISTS (SELECT * FROM b WHERE b.ak = a.k AND b.qty > a.id % 5){a_filter}"),
        5 => format!("SELECT a.id, row_number() OVER (PARTITION BY a.k ORDER BY a.id), sum(a.x) OVER (ORDER BY a.id) FROM a WHERE true{a_filter}"),
        6 => format!("SELECT DISTINCT a.k, b.qty FROM a JOIN b ON a.k = b.ak WHERE true{a_filter}{b_filter}"),
        7 => format!("SELECT a.k FROM a WHERE true{a_filter} UNION SELECT b.qty FROM b WHERE true{b_filter}"),
        8 => format!("SELECT a.name FROM a JOIN b ON a.k = b.ak WHERE true{a_filter} ORDER BY b.bid, a.id LIMIT 37"),
        9 => format!("SELECT a.id, (SELECT max(b.amount) FROM b WHERE b.ak = a.k) FROM a WHERE true{a_filter}"),
        10 => format!(
            "SELECT s.k, s.n FROM (SELECT a.k, a.name AS n, a.price * 2 AS p, b.note FROM a JOIN b ON a.k = b.ak{b_filter}) s WHERE s.p > 100"
        ),
        11 => format!(
            "SELECT a.k, a.flag, grouping(a.k, a.flag), count(*), sum(b.qty) FROM a JOIN b ON a.k = b.ak{b_filter} WHERE true{a_filter} GROUP BY ROLLUP(a.k, a.flag)"
        ),
        _ => format!("SELECT count(*), count(e.s) FROM a LEFT JOIN e ON e.k = a.k CROSS JOIN (SELECT 1 AS one) o WHERE true{a_filter}"),
    }
}

#[test]
fn random_queries_give_the_same_rows_with_pruning_on_and_off() {
    let mut r = StdRng::seed_from_u64(0x9_2024);
    let mut c = setup(&mut r);
    for i in 0..400 {
        let sql = random_query(&mut r);
        let bees = if i % 2 == 0 { "on" } else { "off" };
        c.execute(&format!("SET bees = {bees}"), &[]).unwrap();
        c.execute("SET optimizer_column_pruning = on", &[]).unwrap();
        let on = rows_of(&mut c, &sql);
        c.execute("SET optimizer_column_pruning = off", &[]).unwrap();
        let off = rows_of(&mut c, &sql);
        assert_eq!(on, off, "{sql} (bees {bees})");
    }
}

/// A sequence call in a column nobody reads still runs once per row: pruning drops
/// only expressions without effects.
#[test]
fn an_unread_nextval_still_runs_per_row() {
    let mut r = StdRng::seed_from_u64(7);
    let mut c = setup(&mut r);
    c.execute("CREATE SEQUENCE s", &[]).unwrap();
    let sql = "SELECT count(*) FROM (SELECT a.id, nextval('s') AS n FROM a) t";
    assert_eq!(rows_of(&mut c, sql).unwrap(), ["700"]);
    assert_eq!(rows_of(&mut c, "SELECT currval('s')").unwrap(), ["700"]);
}

/// EXPLAIN shows the narrowed plan: the aggregate reads the join directly (no
/// projection of every column of both tables), and the switch restores it.
#[test]
fn the_switch_shows_in_explain() {
    let mut r = StdRng::seed_from_u64(8);
    let mut c = setup(&mut r);
    let sql = "EXPLAIN (COSTS OFF) SELECT count(*) FROM a JOIN b ON a.k = b.ak";
    let plan = rows_of(&mut c, sql).unwrap().join("\n");
    assert!(!plan.contains("Output: id, k, name"), "{plan}");
    c.execute("SET optimizer_column_pruning = off", &[]).unwrap();
    let plan = rows_of(&mut c, sql).unwrap().join("\n");
    assert!(plan.contains("Output: bid, ak, note, qty, amount, id, k, name") || plan.contains("Output: id, k, name"), "{plan}");
    assert_eq!(rows_of(&mut c, "SHOW optimizer_column_pruning").unwrap(), ["off"]);
    c.execute("RESET optimizer_column_pruning", &[]).unwrap();
    assert_eq!(rows_of(&mut c, "SHOW optimizer_column_pruning").unwrap(), ["on"]);
}
