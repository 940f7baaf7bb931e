//! Join bees at the SQL level: random hash joins of every kind (inner, left, right,
//! full, semi, anti; one and two keys of every packable type, probe keys narrower
//! than the build's, with and without a residual ON condition) give the same rows
//! with bees off, with `bee_join` off, and with `bee_join` on under each
//! `bee_maker`; also spilled (`memory_limit = '1MB'`) and on two threads
//! (`parallel_min_rows = 0`), one-off and prepared. Plans that can have a join bee
//! must show one in EXPLAIN.

use beedb_sql::{Connection, Database};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[(self.next() % v.len() as u64) as usize]
    }
}

/// Key columns (name, type, value of row x) — few distinct values, NULL one row in 9.
const KEYS: [(&str, &str, &str); 10] = [
    ("b", "BOOLEAN", "(x * 7 % 3) = 1"),
    ("i2", "SMALLINT", "(x * 7919 % 1009 - 500)::SMALLINT"),
    ("i4", "INTEGER", "(x * 7919 % 997 - 400) * 100003"),
    ("i8", "BIGINT", "(x * 104729 % 1013 - 400)::BIGINT * 10000000019"),
    ("f4", "REAL", "((x * 31 % 1021) - 500)::REAL / 4"),
    ("f8", "DOUBLE PRECISION", "CASE x % 13 WHEN 0 THEN '-0'::DOUBLE PRECISION WHEN 1 THEN 'NaN' ELSE (x * 17 % 1019)::DOUBLE PRECISION / 8 END"),
    ("d", "DATE", "DATE '2024-01-01' + (x * 13 % 1031)"),
    ("ts", "TIMESTAMP", "TIMESTAMP '2024-01-01 00:00:00' + (x * 11 % 1033) * INTERVAL '1 hour'"),
    ("n", "NUMERIC(12,2)", "(x * 7 % 1039)::NUMERIC(12,2) / 4"),
    ("c", "CHAR(3)", "((x * 7 % 900) + 100)::TEXT"),
];

fn setup(c: &mut Connection, left_rows: u64, right_rows: u64) {
    for (t, n) in [("l", left_rows), ("r", right_rows)] {
        let cols: Vec<String> = KEYS.iter().map(|(k, ty, _)| format!("{k} {ty}")).collect();
        c.execute_batch(&format!("CREATE TABLE {t} (id INTEGER, pad TEXT, {})", cols.join(", "))).unwrap();
        // Different multipliers per table so the sides overlap only partly.
        let shift = if t == "l" { 0 } else { 3 };
        let vals: Vec<String> = KEYS
            .iter()
            .enumerate()
            .map(|(i, (_, _, v))| format!("CASE WHEN (x + {i}) % 9 = 0 THEN NULL ELSE {} END", v.replace('x', &format!("(x + {shift})"))))
            .collect();
        c.execute_batch(&format!(
            "INSERT INTO {t} SELECT x, repeat('p', (x % 200)::INTEGER), {} FROM generate_series(1, {n}) g(x)",
            vals.join(", ")
        ))
        .unwrap();
    }
}

fn rows(c: &mut Connection, sql: &str) -> Result<Vec<String>, String> {
    let mut v: Vec<String> = c.query(sql, &[]).map_err(|e| format!("{sql}: {e}"))?.rows.iter().map(|r| format!("{:?}", r.0)).collect();
    v.sort();
    Ok(v)
}

/// A random join of l and r on one or two keys (same column, or a narrower integer
/// probing a wider build key), of a random kind, maybe with a residual condition.
fn random_join(rng: &mut Rng) -> String {
    let nkeys = 1 + rng.next() % 2;
    let mut conds = Vec::new();
    for _ in 0..nkeys {
        // A boolean key only beside another (alone it would pair most rows).
        let k = KEYS[(1 + rng.next() % (KEYS.len() as u64 - 1)) as usize].0;
        if rng.next() % 8 == 0 {
            conds.push("l.b = r.b".to_string());
        }
        let cross = match k {
            "i2" => rng.pick(&["i2", "i4", "i8"]),
            "i4" => rng.pick(&["i4", "i8"]),
            other => other,
        };
        conds.push(format!("l.{k} = r.{cross}"));
    }
    if rng.next() % 3 == 0 {
        conds.push(rng.pick(&["l.id < r.id", "l.id % 3 <> r.id % 5", "r.pad <> 'ppp'"]).to_string());
    }
    let on = conds.join(" AND ");
    let filter = rng.pick(&["", "WHERE l.id % 2 = 0", ""]);
    match rng.next() % 6 {
        0 => format!("SELECT l.id, r.id FROM l JOIN r ON {on} {filter}"),
        1 => format!("SELECT l.id, r.id, r.pad FROM l LEFT JOIN r ON {on} {filter}"),
        2 => format!("SELECT l.id, r.id FROM l RIGHT JOIN r ON {on}"),
        3 => format!("SELECT l.id, r.id FROM l FULL JOIN r ON {on}"),
        4 => format!("SELECT l.id FROM l WHERE EXISTS (SELECT 1 FROM r WHERE {on})"),
        _ => format!("SELECT l.id, l.pad FROM l WHERE NOT EXISTS (SELECT 1 FROM r WHERE {on})"),
    }
}

fn set(c: &mut Connection, settings: &[&str]) {
    for s in ["RESET bees", "RESET bee_join", "RESET bee_maker", "RESET memory_limit", "SET threads = 1", "RESET parallel_min_rows"] {
        c.execute(s, &[]).unwrap();
    }
    for s in settings {
        c.execute(s, &[]).unwrap();
    }
}

#[test]
fn join_bees_give_the_generic_answers() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    setup(&mut c, 8000, 8000);
    let modes: [&[&str]; 7] = [
        &["SET bee_join = off"],
        &["SET bee_maker = instantiated"],
        &["SET bee_maker = compiled"],
        &["SET bee_maker = instantiated", "SET memory_limit = '1MB'"],
        &["SET bee_join = off", "SET memory_limit = '1MB'"],
        &["SET bee_maker = instantiated", "SET threads = 2", "SET parallel_min_rows = 0"],
        &["SET bee_maker = compiled", "SET threads = 2", "SET parallel_min_rows = 0", "SET memory_limit = '1MB'"],
    ];
    let mut rng = Rng(0x5eed_1234);
    let (mut with_bee, mut spilled) = (0, 0);
    for q in 0..40 {
        let sql = random_join(&mut rng);
        set(&mut c, &["SET bees = off"]);
        let want = rows(&mut c, &sql).unwrap();
        for m in modes {
            set(&mut c, m);
            match rows(&mut c, &sql) {
                Ok(got) => assert_eq!(got, want, "query {q} under {m:?}: {sql}"),
                // A join whose rows of one key do not fit the limit may still fail.
                Err(e) if e.contains("memory") || e.contains("53200") => {}
                Err(e) => panic!("query {q} under {m:?}: {e}"),
            }
        }
        set(&mut c, &["SET bee_maker = instantiated"]);
        let plan = rows(&mut c, &format!("EXPLAIN {sql}")).unwrap().join("\n");
        if plan.contains("Bee: join, instantiated") {
            with_bee += 1;
        }
        set(&mut c, &["SET bee_maker = instantiated", "SET memory_limit = '1MB'"]);
        if let Ok(p) = rows(&mut c, &format!("EXPLAIN ANALYZE {sql}"))
            && p.iter().any(|l| l.contains("Spilled:"))
        {
            spilled += 1;
        }
        // Prepared: the bee belongs to the statement; run twice.
        set(&mut c, &["SET bee_maker = instantiated"]);
        let st = c.prepare(&sql).unwrap();
        for _ in 0..2 {
            let mut got: Vec<String> = st.execute(&mut c, &[]).unwrap().rows.iter().map(|r| format!("{:?}", r.0)).collect();
            got.sort();
            assert_eq!(got, want, "prepared query {q}: {sql}");
        }
    }
    assert!(with_bee >= 10, "only {with_bee} of 40 joins had a join bee");
    assert!(spilled >= 5, "only {spilled} of 40 joins spilled at 1MB");
}

/// Keys the bee cannot take (strings, a probe wider than its slot) get no bee; the
/// rest show it on the Hash Join line.
#[test]
fn explain_shows_the_join_bee_where_the_keys_pack() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    setup(&mut c, 10, 10);
    let plan = |c: &mut Connection, sql: &str| rows(c, &format!("EXPLAIN {sql}")).unwrap().join("\n");
    let p = plan(&mut c, "SELECT * FROM l JOIN r ON l.i4 = r.i4");
    assert!(p.contains("Bee: join, instantiated"), "{p}");
    let p = plan(&mut c, "SELECT * FROM l JOIN r ON l.c = r.c");
    assert!(p.contains("Hash Join") && !p.contains("Bee: join"), "{p}");
    c.execute("SET bee_join = off", &[]).unwrap();
    let p = plan(&mut c, "SELECT * FROM l JOIN r ON l.i4 = r.i4");
    assert!(p.contains("Hash Join") && !p.contains("Bee: join"), "{p}");
    c.execute("SET bee_join = on", &[]).unwrap();
    c.execute("SET bee_maker = compiled", &[]).unwrap();
    let p = plan(&mut c, "SELECT * FROM l JOIN r ON l.i4 = r.i4 AND l.i2 = r.i2");
    assert!(p.contains("Bee: join, compiled (bee_maker = compiled)"), "{p}");
    // Several parts in 128 bits: measured slower than the generic probe, no bee.
    let p = plan(&mut c, "SELECT * FROM l JOIN r ON l.i8 = r.i8 AND l.d = r.d");
    assert!(p.contains("Hash Join") && !p.contains("Bee: join"), "{p}");
}
