//! Aggregate bees at the SQL level: random GROUP BY queries over a random table of
//! every groupable type (NULLs, extremes, NaN and −0, `char(n)` padding, multibyte
//! strings longer in bytes than a packed key part holds, so the bee hands over to
//! the generic path mid-input) give the same answer — or the same error — with
//! `bee_agg` off, and on with each maker; in memory, spilled (`memory_limit`) and
//! with two threads; one-off and prepared.

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

const COLUMNS: [(&str, &str); 13] = [
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
    ("c", "CHAR(3)"),
    ("v", "VARCHAR(4)"),
    ("t", "TEXT"),
];

/// Columns a group key may be (the others are aggregated only).
const KEYS: [&str; 12] = ["b", "i2", "i4", "i8", "f4", "f8", "d", "ts", "n", "c", "v", "t"];

fn literal(rng: &mut Rng, col: usize, id: usize) -> String {
    let r = rng.next();
    if r % 7 == 0 {
        return "NULL".into();
    }
    let x = (r >> 8) % 9;
    let s = x as i64 - 4;
    match col {
        0 => ["true", "false"][x as usize % 2].into(),
        1 => format!("{}", [s, 32767, -32768][(r >> 20) as usize % 3]),
        2 => format!("{}", if r % 13 == 1 { 2147483647 } else { s * 1000 }),
        3 => format!("{}", if r % 11 == 1 { 9223372036854775807i64 / 2 } else { s * 1_000_000_007 }),
        4 | 5 => ["'NaN'", "'-0'", "0", "'Infinity'", "1.5", "-2.25", "1e-30", "3", "0.1"][x as usize].into(),
        6 => format!("DATE '2024-01-01' + {s}"),
        7 => format!("TIMESTAMP '2024-01-01 00:00:00' + INTERVAL '{s} hours'"),
        8 => format!("{s}{}.{}", if r % 5 == 0 { "999999999" } else { "" }, x * 11 % 100),
        9 => ["1", "1.0", "1.00", "-0.5", "123456789012345678901234.5", "0", "-7", "2.50", "2.5"][x as usize].into(),
        10 => ["''", "'a '", "'a'", "'ab'", "'abc'", "' a'", "'z'", "'é'", "'zz'"][x as usize].into(),
        // Multibyte strings past 2/3 of the table: more bytes than a packed part.
        11 if id > 2000 && x == 8 => "'éééé'".into(),
        _ => ["''", "'a'", "'a '", "'b'", "'xy'", "'é'", "'B'", "'yyyy'", "'ab'"][x as usize].into(),
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
                let v: Vec<String> = (0..COLUMNS.len()).map(|c| literal(&mut rng, c, id)).collect();
                format!("({id}, {})", v.join(", "))
            })
            .collect();
        c.execute_batch(&format!("INSERT INTO s VALUES {}", values.join(", "))).unwrap();
    }
}

/// The answer as sorted rows, or the error.
fn answer(c: &mut Connection, sql: &str) -> Result<Vec<String>, String> {
    match c.query(sql, &[]) {
        Ok(r) => {
            let mut v: Vec<String> = r.rows.iter().map(|r| format!("{:?}", r.0)).collect();
            v.sort();
            Ok(v)
        }
        Err(e) => Err(format!("{} {}", e.sqlstate, e.message)),
    }
}

/// An answer with −0 and 0 as one value: which of the two a group of float keys
/// shows is its first row's, which spilling and threads change, with or without
/// bees.
fn canon(a: Result<Vec<String>, String>) -> Result<Vec<String>, String> {
    a.map(|v| {
        let mut v: Vec<String> = v.into_iter().map(|r| r.replace("(-0.0)", "(0.0)")).collect();
        v.sort();
        v
    })
}

fn aggregates(rng: &mut Rng) -> String {
    let n = 1 + rng.next() % 5;
    (0..n)
        .map(|_| {
            let col = COLUMNS[(rng.next() % COLUMNS.len() as u64) as usize].0;
            let f = ["count", "sum", "avg", "min", "max", "count"][(rng.next() % 6) as usize];
            match (f, col) {
                _ if rng.next() % 9 == 0 => "count(*)".to_string(),
                ("sum" | "avg", "b" | "d" | "ts" | "c" | "v" | "t") => format!("count({col})"),
                ("min" | "max", "b") => format!("bool_and({col})"),
                // An argument whose evaluation overflows (an error either way).
                ("sum", "i4") if rng.next() % 3 == 0 => "sum(i4 * 1000)".to_string(),
                // Computed numerics (typed `numeric`, held as scaled i64s while they fit).
                ("sum" | "avg", "n") if rng.next() % 2 == 0 => format!("{f}(n * (1 - n))"),
                _ => format!("{f}({col})"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn group_by(rng: &mut Rng) -> Vec<&'static str> {
    let n = 1 + rng.next() % 3;
    (0..n).map(|_| KEYS[(rng.next() % KEYS.len() as u64) as usize]).collect()
}

#[test]
fn group_by_is_the_same_with_aggregate_bees_on_and_off() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    table(&mut c, 3000, 42);
    let mut rng = Rng(11);
    let mut errors = 0;
    for q in 0..80 {
        let keys = group_by(&mut rng).join(", ");
        let where_ = if q % 4 == 0 { " WHERE id % 3 <> 1" } else { "" };
        let sql = format!("SELECT {keys}, {} FROM s{where_} GROUP BY {keys}", aggregates(&mut rng));
        c.execute_batch("SET bee_agg = off").unwrap();
        let want = answer(&mut c, &sql);
        errors += usize::from(want.is_err());
        for maker in ["instantiated", "compiled", "auto"] {
            c.execute_batch(&format!("SET bee_agg = on; SET bee_maker = {maker}")).unwrap();
            assert!(answer(&mut c, &sql) == want, "{maker}: {sql}");
        }
        c.execute_batch("RESET bee_maker").unwrap();
        if q % 5 == 0 {
            c.execute_batch("SET memory_limit = '64kB'").unwrap();
            assert!(canon(answer(&mut c, &sql)) == canon(want.clone()), "spilled: {sql}");
            c.execute_batch("RESET memory_limit").unwrap();
        }
        if q % 3 == 0 {
            c.execute_batch("SET threads = 2; SET parallel_min_rows = 0").unwrap();
            assert!(canon(answer(&mut c, &sql)) == canon(want.clone()), "two threads: {sql}");
            c.execute_batch("SET bees = off").unwrap();
            assert!(canon(answer(&mut c, &sql)) == canon(want.clone()), "two threads, bees off: {sql}");
            c.execute_batch("RESET threads; RESET parallel_min_rows; RESET bees").unwrap();
        }
    }
    assert!(errors > 0, "some query failed");
    // Every key type alone, from a prepared statement.
    for key in KEYS {
        let sql = format!("SELECT {key}, count(*), sum(i2), avg(n), min(f8), max(d) FROM s GROUP BY {key}");
        c.execute_batch("SET bee_agg = off").unwrap();
        let want = answer(&mut c, &sql).unwrap();
        c.execute_batch("SET bee_agg = on").unwrap();
        let st = c.prepare(&sql).unwrap();
        for _ in 0..2 {
            let mut got: Vec<String> = st.execute(&mut c, &[]).unwrap().rows.iter().map(|r| format!("{:?}", r.0)).collect();
            got.sort();
            assert_eq!(got, want, "prepared: {sql}");
        }
    }
    let used = answer(&mut c, "SELECT sum(invocations) FROM beedb_bees WHERE kind = 'aggregate'").unwrap();
    assert_ne!(used, vec!["[BigInt(0)]".to_string()], "aggregate bees ran");
}

#[test]
fn the_switch_and_explain() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    table(&mut c, 100, 3);
    let plan = |c: &mut Connection, sql: &str| answer(c, &format!("EXPLAIN (COSTS OFF) {sql}")).unwrap().join("\n");
    let q = "SELECT c, n, sum(n), avg(i4), count(*) FROM s GROUP BY c, n";
    assert!(plan(&mut c, q).contains("Bee: aggregate, "), "{}", plan(&mut c, q));
    // What the bee does not do: no bee.
    for other in [
        "SELECT t, sum(n) FROM s GROUP BY t",
        "SELECT c, min(nu) FROM s GROUP BY c",
        "SELECT c, count(DISTINCT i4) FROM s GROUP BY c",
        "SELECT c, string_agg(t, ',') FROM s GROUP BY c",
        "SELECT sum(n) FROM s",
        "SELECT c, sum(n) FROM s GROUP BY ROLLUP (c)",
    ] {
        assert!(!plan(&mut c, other).contains("Bee: aggregate"), "{other}");
    }
    c.execute_batch("SET bee_agg = off").unwrap();
    assert!(!plan(&mut c, q).contains("Bee: aggregate"));
    assert_eq!(answer(&mut c, "SHOW bee_agg").unwrap(), vec!["[Text(\"off\")]".to_string()]);
    c.execute_batch("SET bee_agg = on; SET bees = off").unwrap();
    assert!(!plan(&mut c, q).contains("Bee: aggregate"));
}
