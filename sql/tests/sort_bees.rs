//! Sort bees at the SQL level: every ORDER BY over a random table of every sortable
//! type (NULLs, ties, NaN and −0, decimals of mixed scales, `char(n)` padding,
//! strings sharing long prefixes) returns exactly the same rows in the same order
//! with `bee_sort` off (the comparator) and on, with each maker; in memory, spilled
//! and top-N; one-off and prepared.

use beedb_sql::{Connection, Database};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const COLUMNS: [(&str, &str); 14] = [
    ("b", "BOOLEAN"),
    ("i2", "SMALLINT"),
    ("i4", "INTEGER"),
    ("i8", "BIGINT"),
    ("f4", "REAL"),
    ("f8", "DOUBLE PRECISION"),
    ("d", "DATE"),
    ("ts", "TIMESTAMP"),
    ("n", "NUMERIC(12,2)"),
    ("nu", "NUMERIC"),
    ("iv", "INTERVAL"),
    ("t", "TEXT"),
    ("c", "CHAR(16)"),
    ("v", "VARCHAR(40)"),
];

fn literal(rng: &mut Rng, col: usize) -> String {
    let r = rng.next();
    if r % 7 == 0 {
        return "NULL".into();
    }
    let x = (r >> 8) % 9;
    let s = x as i64 - 4;
    match col {
        0 => ["true", "false"][x as usize % 2].into(),
        1 | 2 | 3 => format!("{}", s * [1, 1000, 1_000_000_007][col - 1]),
        4 | 5 => ["'NaN'", "'-0'", "0", "'Infinity'", "'-Infinity'", "1.5", "-2.25", "1e-30", "3"][x as usize].into(),
        6 => format!("DATE '2024-01-01' + {s}"),
        7 => format!("TIMESTAMP '2024-01-01 00:00:00' + INTERVAL '{s} hours'"),
        8 => format!("{s}.{}", x * 11 % 100),
        9 => ["1", "1.0", "1.00", "-0.5", "123456789012345678901234.5", "0", "-7", "2.50", "2.5"][x as usize].into(),
        10 => ["'1 month'", "'30 days'", "'720 hours'", "'-1 day'", "'0'", "'1 year 2 days'", "'1 day'", "'24 hours'", "'1 mon -1 day'"][x as usize].into(),
        11 | 13 => ["''", "'a'", "'common-prefix-a'", "'common-prefix-b'", "'common-prefix-'", "'common-prefi'", "'é'", "'B'", "'common-prefix-a '"][x as usize].into(),
        _ => ["''", "'a '", "'a'", "'abcdefghijklmn'", "'abcdefghijklmz'", "'abcdefghijkl '", "' a'", "'z'", "'abcdefghijklmn  '"][x as usize].into(),
    }
}

fn table(c: &mut Connection, rows: usize, seed: u64) {
    let cols: Vec<String> = COLUMNS.iter().map(|(n, t)| format!("{n} {t}")).collect();
    c.execute_batch(&format!("CREATE TABLE s (id INTEGER, {})", cols.join(", "))).unwrap();
    let mut rng = Rng(seed);
    for chunk in (0..rows).collect::<Vec<_>>().chunks(200) {
        let values: Vec<String> = chunk
            .iter()
            .map(|&id| {
                let v: Vec<String> = (0..COLUMNS.len()).map(|c| literal(&mut rng, c)).collect();
                format!("({id}, {})", v.join(", "))
            })
            .collect();
        c.execute_batch(&format!("INSERT INTO s VALUES {}", values.join(", "))).unwrap();
    }
}

fn rows(c: &mut Connection, sql: &str) -> Vec<String> {
    c.query(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}")).rows.iter().map(|r| format!("{:?}", r.0)).collect()
}

fn order_by(rng: &mut Rng) -> String {
    let n = 1 + rng.next() % 3;
    (0..n)
        .map(|_| {
            let (name, _) = COLUMNS[(rng.next() % COLUMNS.len() as u64) as usize];
            let dir = ["", " DESC", " ASC NULLS FIRST", " DESC NULLS LAST"][(rng.next() % 4) as usize];
            format!("{name}{dir}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn order_by_is_the_same_with_sort_bees_on_and_off() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    table(&mut c, 3000, 42);
    let mut rng = Rng(7);
    for q in 0..60 {
        let keys = order_by(&mut rng);
        let limit = if q % 5 == 0 { " LIMIT 100" } else { "" };
        // Ties keep their input order (the sort is stable): no id in the keys.
        let sql = format!("SELECT * FROM s ORDER BY {keys}{limit}");
        c.execute_batch("SET bee_sort = off").unwrap();
        let want = rows(&mut c, &sql);
        for maker in ["instantiated", "compiled"] {
            c.execute_batch(&format!("SET bee_sort = on; SET bee_maker = {maker}")).unwrap();
            assert_eq!(rows(&mut c, &sql), want, "{maker}: {sql}");
        }
        // Spilled: the runs are ordered by the bee, merged by the comparator.
        if q % 6 == 0 {
            c.execute_batch("SET memory_limit = '256kB'").unwrap();
            assert_eq!(rows(&mut c, &sql), want, "spilled: {sql}");
            c.execute_batch("RESET memory_limit").unwrap();
        }
        c.execute_batch("RESET bee_maker").unwrap();
    }
    // Every type alone, both directions, from a prepared statement.
    for (name, _) in COLUMNS {
        for dir in ["", " DESC NULLS FIRST"] {
            let sql = format!("SELECT id, {name} FROM s ORDER BY {name}{dir}");
            c.execute_batch("SET bee_sort = off").unwrap();
            let want = rows(&mut c, &sql);
            c.execute_batch("SET bee_sort = on").unwrap();
            let st = c.prepare(&sql).unwrap();
            for _ in 0..2 {
                let got: Vec<String> = st.execute(&mut c, &[]).unwrap().rows.iter().map(|r| format!("{:?}", r.0)).collect();
                assert_eq!(got, want, "prepared: {sql}");
            }
        }
    }
    let used = rows(&mut c, "SELECT sum(invocations) FROM beedb_bees WHERE kind = 'sort'");
    assert_ne!(used, vec!["[BigInt(0)]".to_string()], "sort bees ran");
}

#[test]
fn the_switch_and_explain() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    table(&mut c, 100, 3);
    let explain = |c: &mut Connection| rows(c, "EXPLAIN (COSTS OFF) SELECT id FROM s ORDER BY n DESC, t").join("\n");
    assert!(explain(&mut c).contains("Bee: sort, "), "{}", explain(&mut c));
    c.execute_batch("SET bee_sort = off").unwrap();
    assert!(!explain(&mut c).contains("Bee: sort"));
    assert_eq!(rows(&mut c, "SHOW bee_sort"), vec!["[Text(\"off\")]".to_string()]);
    c.execute_batch("SET bee_sort = on; SET bees = off").unwrap();
    assert!(!explain(&mut c).contains("Bee: sort"));
}
