//! Differential test of subquery decorrelation: every query gives the same rows (or
//! the same error) with `optimizer_decorrelate` on and off, on data with NULLs,
//! duplicates, empty groups and an empty table; and EXPLAIN shows that the rule
//! turned the subqueries it should into joins (no `SubPlan` left) and left the others.

use beedb::{Connection, Database};

/// Deterministic pseudo-random numbers (a 64-bit LCG), so a failure reproduces.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }

    /// A value below `n`, or NULL about one time in `null_one_in`.
    fn value(&mut self, n: u64, null_one_in: u64) -> String {
        if self.next(null_one_in) == 0 {
            "NULL".into()
        } else {
            self.next(n).to_string()
        }
    }
}

fn setup() -> Connection {
    let db = Database::open(":memory:").expect("open");
    let mut conn = db.connect();
    conn.execute_batch(
        "CREATE TABLE o (id INTEGER, k INTEGER, x INTEGER);
         CREATE TABLE i (k INTEGER, y INTEGER, z INTEGER);
         CREATE TABLE i2 (k INTEGER, z INTEGER);
         CREATE TABLE e (k INTEGER, y INTEGER);
         CREATE TABLE u (uid INTEGER, k INTEGER, y INTEGER);",
    )
    .expect("schema");
    let mut rng = Lcg(42);
    let mut insert = |table: &str, rows: usize, cols: &[(u64, u64)], conn: &mut Connection| {
        let values: Vec<String> = (0..rows)
            .map(|r| {
                let vals: Vec<String> = cols
                    .iter()
                    .map(|&(n, nulls)| if n == 0 { r.to_string() } else { rng.value(n, nulls) })
                    .collect();
                format!("({})", vals.join(", "))
            })
            .collect();
        conn.execute(&format!("INSERT INTO {table} VALUES {}", values.join(", ")), &[])
            .expect("insert");
    };
    // o.k in 0..30 and i.k in 0..20: some outer keys have no inner group.
    insert("o", 300, &[(0, 1), (30, 10), (50, 8)], &mut conn);
    insert("i", 400, &[(20, 12), (50, 10), (40, 1_000_000)], &mut conn);
    insert("i2", 100, &[(25, 10), (40, 1_000_000)], &mut conn);
    // u.uid is unique (the row number, 0..200): a scalar subquery on it has one row
    // or none per outer row.
    insert("u", 200, &[(0, 1), (30, 10), (50, 8)], &mut conn);
    conn
}

/// Each query, and whether the rule must leave no subplan in its plan.
const QUERIES: &[(&str, bool)] = &[
    ("SELECT id FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k = o.k)", true),
    ("SELECT id FROM o WHERE NOT EXISTS (SELECT 1 FROM i WHERE i.k = o.k)", true),
    ("SELECT id FROM o WHERE EXISTS (SELECT * FROM i WHERE i.k = o.k AND i.y <> o.x)", true),
    ("SELECT id FROM o WHERE NOT EXISTS (SELECT * FROM i WHERE i.k = o.k AND i.y > o.x)", true),
    ("SELECT id FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.y > o.x + 45)", true),
    ("SELECT id FROM o WHERE EXISTS (SELECT y FROM i WHERE i.k = o.k ORDER BY y LIMIT 1)", true),
    ("SELECT id FROM o WHERE EXISTS (SELECT DISTINCT k FROM i WHERE i.k = o.k)", true),
    ("SELECT id FROM o WHERE EXISTS (SELECT y FROM i WHERE i.k = o.k OFFSET 3)", false),
    ("SELECT id FROM o WHERE EXISTS (SELECT count(*) FROM i WHERE i.k = o.k)", false),
    ("SELECT id FROM o WHERE EXISTS (SELECT 1 FROM e WHERE e.k = o.k)", true),
    ("SELECT id FROM o WHERE NOT EXISTS (SELECT 1 FROM e WHERE e.k = o.k)", true),
    ("SELECT id FROM o WHERE x IN (SELECT y FROM i)", true),
    ("SELECT id FROM o WHERE x IN (SELECT y FROM i WHERE i.k = o.k)", true),
    ("SELECT id FROM o WHERE x NOT IN (SELECT y FROM i WHERE i.k = o.k)", true),
    ("SELECT id FROM o WHERE x NOT IN (SELECT y FROM i WHERE i.k = o.k AND y IS NOT NULL)", true),
    ("SELECT id FROM o WHERE NOT (x IN (SELECT y FROM i WHERE i.k = o.k))", true),
    ("SELECT id FROM o WHERE x NOT IN (SELECT y FROM e WHERE e.k = o.k)", true),
    ("SELECT id FROM o WHERE x NOT IN (SELECT y FROM i WHERE i.z > 2 * o.id)", true),
    ("SELECT id FROM o WHERE k IN (SELECT k FROM i GROUP BY k HAVING count(*) > 20)", true),
    ("SELECT id, x FROM o WHERE x > (SELECT avg(y) FROM i WHERE i.k = o.k)", true),
    ("SELECT id FROM o WHERE x < (SELECT 0.5 * sum(y) FROM i WHERE i.k = o.k AND i.z = o.x)", true),
    ("SELECT id, (SELECT count(*) FROM i WHERE i.k = o.k) FROM o", true),
    ("SELECT id, (SELECT count(y) * 2 + 1 FROM i WHERE i.k = o.k) FROM o", true),
    ("SELECT id FROM o WHERE (SELECT count(*) FROM i WHERE i.k = o.k) = 0", true),
    ("SELECT id, (SELECT coalesce(max(y), -1) FROM i WHERE i.k = o.k) FROM o", true),
    ("SELECT id, (SELECT sum(y) FROM e WHERE e.k = o.k) FROM o", true),
    ("SELECT k, (SELECT min(y) FROM i WHERE i.k = o.k) FROM o GROUP BY k", true),
    // Scalar subqueries without an aggregate: a left join with the rows grouped by
    // the correlation keys; more than one row for an evaluated outer row is still
    // the error (i.k repeats, so the second query fails both ways).
    ("SELECT id, (SELECT y FROM u WHERE u.uid = o.id) FROM o", true),
    ("SELECT id, (SELECT y FROM u WHERE u.uid = o.id AND u.k = o.k) FROM o", true),
    ("SELECT id, (SELECT y FROM u WHERE u.uid = o.id AND u.y > 20) FROM o", true),
    ("SELECT id FROM o WHERE x = (SELECT y FROM u WHERE u.uid = o.id)", true),
    ("SELECT id FROM o WHERE (SELECT y FROM u WHERE u.uid = o.id) IS NULL", true),
    ("SELECT id, (SELECT y > 10 FROM u WHERE u.uid = o.id), (SELECT 'v' || y FROM u WHERE u.uid = o.id) FROM o", true),
    ("SELECT id, (SELECT u.y + i2.z FROM u JOIN i2 ON i2.k = u.k AND i2.z = 7 WHERE u.uid = o.id) FROM o", true),
    ("SELECT id, (SELECT y FROM e WHERE e.k = o.k) FROM o", true),
    ("SELECT id, (SELECT DISTINCT k FROM i WHERE i.k = o.k) FROM o", true),
    ("SELECT id, (SELECT y FROM i WHERE i.k = o.k) FROM o", true),
    ("SELECT id, (SELECT y FROM i WHERE i.z = o.x + 1000000) FROM o", true),
    ("SELECT id, CASE WHEN o.k > 100 THEN (SELECT y FROM i WHERE i.k = o.k) END FROM o", true),
    ("SELECT id, (SELECT y FROM i WHERE i.k = o.k ORDER BY y LIMIT 1) FROM o", false),
    ("SELECT id, (SELECT y FROM i WHERE i.z > o.id AND i.k = o.k) FROM o", false),
    // GROUP BY inside: the correlation key joins the grouping keys; HAVING on a
    // scalar aggregate: the value is NULL for a group it rejects (and for no rows,
    // unless the empty input passes it).
    ("SELECT id FROM o WHERE x > (SELECT max(y) FROM i WHERE i.k = o.k GROUP BY z)", true),
    ("SELECT id, (SELECT max(y) FROM i WHERE i.k = o.k GROUP BY y) FROM o", true),
    ("SELECT id FROM o WHERE x > (SELECT max(y) FROM i WHERE i.k = o.k HAVING count(*) > 10)", true),
    ("SELECT id, (SELECT count(*) FROM i WHERE i.k = o.k HAVING count(*) < 15) FROM o", true),
    ("SELECT id, (SELECT count(*) FROM i WHERE i.k = o.k HAVING count(*) = 0) FROM o", true),
    // (Integer arithmetic may overflow: computed for every group, it is declined.)
    ("SELECT id, (SELECT count(*) + 1 FROM i WHERE i.k = o.k HAVING count(*) = 0) FROM o", false),
    ("SELECT id, (SELECT max(c) FROM (SELECT z, count(*) AS c FROM i WHERE i.k = o.k GROUP BY z) s) FROM o", true),
    ("SELECT id, (SELECT sum(c) FROM (SELECT z, count(*) AS c FROM i WHERE i.k = o.k GROUP BY z HAVING count(*) > 1) s) FROM o", true),
    ("SELECT id FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k = o.k GROUP BY z HAVING count(*) > 1)", true),
    ("SELECT id FROM o WHERE x IN (SELECT max(y) FROM i WHERE i.k = o.k GROUP BY z)", true),
    ("SELECT id, (SELECT count(*) FROM i WHERE i.k = o.k GROUP BY z, k HAVING z IS NULL) FROM o", true),
    // Correlation that is not all equalities: grouped by the outer values (a domain).
    ("SELECT id, (SELECT count(*) FROM i WHERE i.k < o.k) FROM o", true),
    ("SELECT id, (SELECT sum(y) FROM i WHERE i.k = o.k AND i.z > o.x) FROM o", true),
    ("SELECT id, (SELECT avg(y) FROM i WHERE i.k <> o.k AND i.y < o.x) FROM o", true),
    ("SELECT id FROM o WHERE x < (SELECT count(*) FROM i WHERE i.y BETWEEN o.x AND o.id)", true),
    ("SELECT id, (SELECT coalesce(min(y), -1) FROM i WHERE i.k > o.id HAVING count(*) > 2) FROM o", true),
    // … nor when an aggregate, group key or HAVING could raise an error for groups
    // no evaluated outer row selects.
    ("SELECT id, (SELECT max(100 / z) FROM i WHERE i.k = o.k GROUP BY y HAVING y = 7) FROM o WHERE x > 0", false),
    ("SELECT id FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k = o.k GROUP BY y HAVING max(100 / z) > 0)", false),
    ("SELECT id, (SELECT sum(z) FROM i WHERE i.k = o.k HAVING 100 / min(z) > 1) FROM o", false),
    ("SELECT id, (SELECT sum(100 / z) FROM i WHERE i.z > o.x) FROM o", false),
    ("SELECT id, (SELECT regr_count(z, y) FROM i WHERE i.z > 1000000 AND i.z < o.x) FROM o", true),
    ("SELECT id, (SELECT regr_count(z, y) FROM i WHERE i.k = o.k + 1000) FROM o", true),
    // … nor over outer rows a second run could choose differently (LIMIT over ties).
    ("SELECT id, (SELECT count(*) FROM i WHERE i.k < s.k) FROM (SELECT * FROM o ORDER BY k LIMIT 5) s", false),
    // … but not when a NULL outer value could still select rows.
    ("SELECT id, (SELECT count(*) FROM i WHERE i.k < o.k OR o.k IS NULL) FROM o", false),
    // A correlation repeated in every branch of an OR is a conjunct of its own.
    ("SELECT id, (SELECT count(*) FROM i WHERE (i.k = o.k AND i.y > 10) OR (i.k = o.k AND i.z < 5)) FROM o", true),
    (
        "SELECT id FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k = o.k \
         AND EXISTS (SELECT 1 FROM i2 WHERE i2.z = i.z))",
        true,
    ),
    (
        "SELECT id FROM o WHERE x > (SELECT min(y) FROM i WHERE i.k = o.k \
         AND i.y >= (SELECT avg(y) FROM i AS b WHERE b.k = i.k))",
        true,
    ),
    (
        "SELECT id FROM o WHERE o.k IN (SELECT i.k FROM i WHERE i.y > \
         (SELECT min(b.y) + 20 FROM i AS b WHERE b.k = i.k))",
        true,
    ),
    (
        "SELECT id FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k = o.k \
         AND EXISTS (SELECT 1 FROM i2 WHERE i2.z = i.z AND i2.k = o.k))",
        false,
    ),
    (
        "SELECT s.id FROM (SELECT id, k FROM o WHERE NOT EXISTS \
         (SELECT 1 FROM i WHERE i.k = o.k)) AS s WHERE s.id > 100",
        true,
    ),
    // Mark joins: EXISTS and IN that are not top-level conjuncts.
    ("SELECT id FROM o WHERE id = 6 OR EXISTS (SELECT 1 FROM i WHERE i.k = o.k AND i.y > 40)", true),
    (
        "SELECT id FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k = o.k AND i.y > 40) \
         OR EXISTS (SELECT 1 FROM i2 WHERE i2.k = o.k AND i2.z > 20)",
        true,
    ),
    ("SELECT id, EXISTS (SELECT 1 FROM i WHERE i.k = o.k AND i.y > o.x) FROM o", true),
    ("SELECT id, x IN (SELECT y FROM i WHERE i.k = o.k), x NOT IN (SELECT y FROM i WHERE i.k = o.k) FROM o", true),
    ("SELECT id, x IN (SELECT y FROM e WHERE e.k = o.k), NULL::int NOT IN (SELECT y FROM i WHERE i.k = o.k) FROM o", true),
    ("SELECT id FROM o WHERE id < 100 OR x IN (SELECT y FROM i WHERE i.k = o.k)", true),
    ("SELECT id FROM o WHERE NOT (id < 100 OR x IN (SELECT y FROM i WHERE i.k = o.k))", true),
    ("SELECT id FROM o WHERE id < 100 OR x NOT IN (SELECT y FROM i WHERE i.k = o.k)", true),
    ("SELECT id FROM o WHERE NOT (id < 100 OR x NOT IN (SELECT y FROM i WHERE i.k = o.k))", true),
    ("SELECT id FROM o WHERE (x IN (SELECT y FROM i WHERE i.k = o.k)) IS NULL", true),
    ("SELECT id FROM o WHERE id < 100 OR x IN (SELECT y FROM i WHERE i.z > 2 * o.id)", true),
    (
        "SELECT id, CASE WHEN x IN (SELECT y FROM i WHERE i.k = o.k) THEN 1 \
         WHEN NOT EXISTS (SELECT 1 FROM i2 WHERE i2.k = o.k) THEN 2 ELSE 3 END FROM o",
        true,
    ),
    (
        "SELECT id FROM o WHERE id < 50 OR EXISTS (SELECT 1 FROM i WHERE i.k = o.k \
         AND (i.z < 100 OR EXISTS (SELECT 1 FROM i2 WHERE i2.z = i.z)))",
        true,
    ),
    (
        "SELECT id FROM o WHERE id < 50 OR EXISTS (SELECT 1 FROM i WHERE i.k = o.k \
         AND (i.z < 100 OR EXISTS (SELECT 1 FROM i2 WHERE i2.z = i.z AND i2.k = o.k)))",
        false,
    ),
    (
        "SELECT count(*) FROM o, i2 WHERE o.k = i2.k AND EXISTS (SELECT 1 FROM i WHERE i.k = o.k) \
         AND i2.z < (SELECT max(z) FROM i WHERE i.k = i2.k)",
        true,
    ),
];

/// The rows as sorted text, or the error's SQLSTATE and message.
fn run(conn: &mut Connection, sql: &str) -> Result<Vec<String>, String> {
    match conn.query(sql, &[]) {
        Ok(r) => {
            let mut rows: Vec<String> = r.rows.iter().map(|row| format!("{:?}", row.values())).collect();
            rows.sort();
            Ok(rows)
        }
        Err(e) => Err(e.to_string()),
    }
}

fn subplans(conn: &mut Connection, sql: &str) -> usize {
    let r = conn.query(&format!("EXPLAIN {sql}"), &[]).expect("explain");
    r.rows
        .iter()
        .filter(|row| format!("{:?}", row.values()).contains("SubPlan"))
        .count()
}

#[test]
fn decorrelated_queries_give_the_rows_of_nested_execution() {
    let mut conn = setup();
    let mut problems = Vec::new();
    let mut nonempty = 0;
    for &(sql, joins) in QUERIES {
        conn.execute("SET optimizer_decorrelate = off", &[]).unwrap();
        let nested = run(&mut conn, sql);
        let nested_subplans = subplans(&mut conn, sql);
        conn.execute("SET optimizer_decorrelate = on", &[]).unwrap();
        let unnested = run(&mut conn, sql);
        let left = subplans(&mut conn, sql);
        if nested != unnested {
            problems.push(format!("{sql}\n  off: {nested:?}\n  on:  {unnested:?}"));
        }
        if nested_subplans == 0 {
            problems.push(format!("{sql}\n  has no subplan with the rule off"));
        }
        if joins && left != 0 {
            problems.push(format!("{sql}\n  {left} subplan(s) left with the rule on"));
        }
        if !joins && left == 0 {
            problems.push(format!("{sql}\n  expected to stay nested, but no subplan is left"));
        }
        if nested.as_ref().is_ok_and(|r| !r.is_empty()) {
            nonempty += 1;
        }
    }
    // The data must make most answers non-trivial, or the comparison proves little.
    assert!(nonempty * 4 >= QUERIES.len() * 3, "only {nonempty} of {} queries return rows", QUERIES.len());
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_switch_shows_and_resets() {
    let mut conn = setup();
    let show = |conn: &mut Connection| {
        let r = conn.query("SHOW optimizer_decorrelate", &[]).unwrap();
        format!("{:?}", r.rows[0].values())
    };
    assert!(show(&mut conn).contains("on"));
    conn.execute("SET optimizer_decorrelate = off", &[]).unwrap();
    assert!(show(&mut conn).contains("off"));
    conn.execute("RESET optimizer_decorrelate", &[]).unwrap();
    assert!(show(&mut conn).contains("on"));
}
