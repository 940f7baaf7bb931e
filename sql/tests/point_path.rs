//! Differential test of the point-statement path (`exec/point.rs`) against the
//! operator tree: two databases get the same random statements, one with
//! `point_path = on`, the other off, and every answer — rows with their value types,
//! counts, command tags, SQLSTATEs, messages and DETAILs — and the tables at the end
//! must be equal. The statements are prepared lookups, updates and deletes by a
//! unique key (one column, two columns, a text key), by a non-unique key (a handful
//! of rows, or more than the point path takes: it then declines and the operator
//! tree runs the plan) and by a key range, run with random keys: present,
//! missing, NULL, out of the column's range; updates of key columns (unique
//! violations), of NOT NULL, CHECK and FOREIGN KEY columns (violations of each),
//! arithmetic errors, RETURNING, deletes of referenced rows; in autocommit and in
//! blocks ended by COMMIT or ROLLBACK; with bees on and off.

use beedb_sql::{Connection, Database, Statement, Value};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const SCHEMA: &str = "
    CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT);
    CREATE TABLE t (
        k INTEGER PRIMARY KEY,
        u TEXT UNIQUE,
        a INTEGER,
        b VARCHAR(8),
        v DOUBLE PRECISION,
        w NUMERIC(8,2) CHECK (w >= 0),
        c INTEGER NOT NULL,
        p INTEGER REFERENCES parent (id),
        UNIQUE (a, b)
    );
    CREATE TABLE h (
        id SERIAL PRIMARY KEY,
        k INTEGER REFERENCES parent (id),
        note TEXT DEFAULT 'none',
        n NUMERIC(6,2) CHECK (n < 1000),
        ts TIMESTAMP DEFAULT now()
    );
    CREATE TABLE n (id INTEGER PRIMARY KEY, g INTEGER, x NUMERIC(8,2), s TEXT);
    CREATE INDEX n_g ON n (g);
    INSERT INTO n SELECT i, CASE WHEN i <= 40 THEN -1 ELSE i % 300 END, i / 4.0, 's' || i FROM generate_series(1, 3000) i;
    ANALYZE n;
    INSERT INTO parent SELECT g, 'p' || g FROM generate_series(1, 5) g;
    INSERT INTO t SELECT g, 'u' || g, g % 20, 'b' || (g / 20), g * 1.5, g, g, 1 + g % 5 FROM generate_series(1, 60) g;";

/// The statements both databases prepare, with how to make random parameters.
const STATEMENTS: &[(&str, &[Param])] = &[
    ("SELECT v, k * 2, u FROM t WHERE k = $1", &[Param::Key]),
    ("SELECT * FROM t WHERE k = $1 AND v > $2", &[Param::Key, Param::Float]),
    ("SELECT k, w FROM t WHERE u = $1", &[Param::Text]),
    ("SELECT k, b FROM t WHERE a = $1 AND b = $2", &[Param::Small, Param::Short]),
    ("SELECT 100 / (k - 30) FROM t WHERE k = $1", &[Param::Key]),
    ("UPDATE t SET v = v + $1 WHERE k = $2", &[Param::Float, Param::Key]),
    ("UPDATE t SET k = $1 WHERE k = $2", &[Param::Key, Param::Key]),
    ("UPDATE t SET w = $1 WHERE k = $2", &[Param::Float, Param::Key]),
    ("UPDATE t SET c = $1 WHERE k = $2", &[Param::Small, Param::Key]),
    ("UPDATE t SET p = $1 WHERE k = $2 RETURNING k, p", &[Param::Small, Param::Key]),
    ("UPDATE t SET u = $1 WHERE k = $2 RETURNING *", &[Param::Text, Param::Key]),
    ("UPDATE t SET a = $1, b = $2 WHERE a = $3 AND b = $4", &[Param::Small, Param::Short, Param::Small, Param::Short]),
    ("UPDATE t SET c = c * 1000000 WHERE k = $1", &[Param::Key]),
    ("DELETE FROM t WHERE k = $1 RETURNING *", &[Param::Key]),
    ("DELETE FROM t WHERE u = $1", &[Param::Text]),
    ("DELETE FROM parent WHERE id = $1", &[Param::Small]),
    // Non-unique keys: about 10 rows of n per g, 40 for g = -1 (more than the point
    // path takes: it declines), and rows move between groups.
    ("SELECT id, x, s FROM n WHERE g = $1", &[Param::Group]),
    ("SELECT id, x FROM n WHERE g = $1 AND x > $2", &[Param::Group, Param::Float]),
    ("UPDATE n SET x = x + $1 WHERE g = $2 RETURNING id, x", &[Param::Float, Param::Group]),
    ("UPDATE n SET g = $1 WHERE id = $2", &[Param::Group, Param::Id]),
    ("DELETE FROM n WHERE g = $1 AND x > $2 RETURNING id", &[Param::Group, Param::Float]),
    // Key ranges, one read backward for its ORDER BY.
    ("SELECT id, s FROM n WHERE id BETWEEN $1 AND $2 ORDER BY id DESC", &[Param::Id, Param::Id]),
    ("SELECT id FROM n WHERE id > $1 AND id < $2 AND g <> 7", &[Param::Id, Param::Id]),
    ("UPDATE parent SET id = $1 WHERE id = $2", &[Param::Small, Param::Small]),
    (
        "INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        &[Param::Key, Param::Text, Param::Small, Param::Short, Param::Float, Param::Float, Param::Small, Param::Small],
    ),
    // INSERT of one VALUES row (its point path): defaults, a sequence, the clock,
    // CHECK, NOT NULL, FOREIGN KEY, casts, RETURNING, ON CONFLICT.
    ("INSERT INTO h (k, n) VALUES ($1, $2)", &[Param::Small, Param::Float]),
    (
        "INSERT INTO h (k, note, n) VALUES ($1, $2, $3 * 100) RETURNING id, note, n * 2, ts <= now()",
        &[Param::Small, Param::Text, Param::Float],
    ),
    ("INSERT INTO h (k, ts) VALUES ($1, CURRENT_TIMESTAMP) RETURNING id, ts = now(), ts = h.ts", &[Param::Small]),
    ("INSERT INTO h VALUES (DEFAULT, $1, upper($2), $3 / 0.5, DEFAULT) RETURNING id, k, note, n, ts IS NOT NULL, current_date = now()::date", &[
        Param::Small,
        Param::Text,
        Param::Float,
    ]),
    ("INSERT INTO t (k, u, c) VALUES ($1, $2, $3) RETURNING k, u, c", &[Param::Key, Param::Text, Param::Small]),
    (
        "INSERT INTO t (k, u, c, w) VALUES ($1, $2, $3, $4) ON CONFLICT (k) DO UPDATE SET w = excluded.w RETURNING k, w",
        &[Param::Key, Param::Text, Param::Small, Param::Float],
    ),
    ("INSERT INTO t (k, u, c) VALUES ($1, $2, 1) ON CONFLICT DO NOTHING", &[Param::Key, Param::Text]),
];

#[derive(Clone, Copy)]
enum Param {
    /// A key of `t`: mostly present, sometimes missing, NULL or out of range.
    Key,
    Small,
    Float,
    Text,
    Short,
    /// A group of `n` (`g`): mostly present, sometimes missing.
    Group,
    /// An `id` of `n`.
    Id,
}

fn param(r: &mut StdRng, p: Param) -> Value {
    if r.random_bool(0.06) {
        return Value::Null;
    }
    match p {
        Param::Key => match r.random_range(0..20) {
            0 => Value::BigInt(5_000_000_000), // out of integer's range: 22003
            1 => Value::Integer(r.random_range(-5..0)),
            2 => Value::Text(r.random_range(1..80).to_string()),
            _ => Value::Integer(r.random_range(1..80)),
        },
        Param::Small => Value::Integer(r.random_range(-1..9)),
        Param::Float => Value::Double(r.random_range(-40..400) as f64 / 4.0),
        Param::Text => Value::Text(format!("u{}", r.random_range(1..80))),
        Param::Group => Value::Integer(if r.random_bool(0.2) { -1 } else { r.random_range(-3..310) }),
        Param::Id => Value::Integer(r.random_range(-5..3050)),
        Param::Short => Value::Text(match r.random_range(0..8) {
            0 => "too long for eight".to_string(),
            n => format!("b{}", n % 4),
        }),
    }
}

/// A statement's answer, as text to compare.
fn answer(r: beedb_sql::Result<beedb_sql::QueryResult>) -> String {
    match r {
        Ok(res) => {
            let cols: Vec<String> = res.columns.iter().map(|c| format!("{}:{}", c.name, c.data_type)).collect();
            let rows: Vec<String> = res.rows.iter().map(|row| format!("{:?}", row.0)).collect();
            format!("ok {} {} [{}] {}", res.tag, res.rows_affected, cols.join(","), rows.join(";"))
        }
        Err(e) => without_clock(&format!("error {} {} {:?}", e.sqlstate, e.message, e.detail)),
    }
}

/// `text` with every timestamp (`2026-11-27 09:14:19.259082`) replaced by `<ts>`:
/// the two databases read the clock at different moments (a DETAIL's failing row
/// shows `h.ts`).
fn without_clock(text: &str) -> String {
    let b = text.as_bytes();
    let shape = b"dddd-dd-dd dd:dd:dd";
    let matches_at = |i: usize| {
        i + shape.len() <= b.len()
            && shape.iter().zip(&b[i..]).all(|(&s, &c)| if s == b'd' { c.is_ascii_digit() } else { s == c })
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if matches_at(i) {
            i += shape.len();
            if b.get(i) == Some(&b'.') {
                i += 1;
                while b.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
            }
            out.push_str("<ts>");
        } else {
            let c = text[i..].chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

struct Side {
    conn: Connection,
    prepared: Vec<Statement>,
}

fn side(point_path: &str, bees: &str) -> Side {
    let db = Database::open(":memory:").unwrap();
    let mut conn = db.connect();
    conn.execute_batch(SCHEMA).unwrap();
    conn.set("point_path", point_path).unwrap();
    conn.set("bees", bees).unwrap();
    let prepared = STATEMENTS.iter().map(|(sql, _)| conn.prepare(sql).unwrap()).collect();
    Side { conn, prepared }
}

fn table_contents(conn: &mut Connection) -> String {
    let a = conn.query("SELECT * FROM t ORDER BY k", &[]).unwrap();
    let b = conn.query("SELECT * FROM parent ORDER BY id", &[]).unwrap();
    // The clock differs between the two databases: only whether it was set.
    let c = conn.query("SELECT id, k, note, n, ts IS NOT NULL FROM h ORDER BY id", &[]).unwrap();
    let d = conn.query("SELECT * FROM n ORDER BY id", &[]).unwrap();
    let rows = |r: &beedb_sql::QueryResult| format!("{:?}", r.rows.iter().map(|r| &r.0).collect::<Vec<_>>());
    format!("{}\n{}\n{}\n{}", rows(&a), rows(&b), rows(&c), rows(&d))
}

fn run_both(seed: u64, bees: &str, steps: usize) {
    let mut r = StdRng::seed_from_u64(seed);
    let mut on = side("on", bees);
    let mut off = side("off", bees);
    let mut in_block = false;
    // (statements answered with rows or a count, statements that failed)
    let (mut answered, mut failed) = (0usize, 0usize);
    for step in 0..steps {
        // Now and then a block of statements, ended by COMMIT or ROLLBACK.
        if !in_block && r.random_bool(0.05) {
            let begin = if r.random_bool(0.5) { "BEGIN" } else { "BEGIN IMMEDIATE" };
            on.conn.execute(begin, &[]).unwrap();
            off.conn.execute(begin, &[]).unwrap();
            in_block = true;
        } else if in_block && r.random_bool(0.15) {
            let end = if r.random_bool(0.7) { "COMMIT" } else { "ROLLBACK" };
            let a = answer(on.conn.execute(end, &[]));
            let b = answer(off.conn.execute(end, &[]));
            assert_eq!(a, b, "seed {seed} step {step}: {end}");
            in_block = false;
        }
        let which = r.random_range(0..STATEMENTS.len());
        let (sql, kinds) = STATEMENTS[which];
        let params: Vec<Value> = kinds.iter().map(|&k| param(&mut r, k)).collect();
        // Prepared, or (a third of the time, without NULLs) as literal SQL through the
        // connection's statement cache.
        let literal = r.random_bool(0.3) && !params.iter().any(|p| matches!(p, Value::Null));
        let (a, b) = if literal {
            let mut text = sql.to_string();
            for (i, p) in params.iter().enumerate().rev() {
                let lit = match p {
                    Value::Text(s) => format!("'{s}'"),
                    v => v.to_string(),
                };
                text = text.replace(&format!("${}", i + 1), &lit);
            }
            (answer(on.conn.execute(&text, &[])), answer(off.conn.execute(&text, &[])))
        } else {
            (
                answer(on.prepared[which].execute(&mut on.conn, &params)),
                answer(off.prepared[which].execute(&mut off.conn, &params)),
            )
        };
        assert_eq!(a, b, "seed {seed} step {step}: {sql} with {params:?} (literal: {literal})");
        if a.starts_with("ok") && !a.starts_with("ok SELECT 0") && !a.contains(" 0 [") {
            answered += 1;
        } else if a.starts_with("error") {
            failed += 1;
        }
    }
    // The mix must exercise both outcomes, or the comparison proves little.
    assert!(answered > steps / 6 && failed > steps / 20, "seed {seed}: {answered} answered, {failed} failed of {steps}");
    if in_block {
        on.conn.execute("COMMIT", &[]).ok();
        off.conn.execute("COMMIT", &[]).ok();
    }
    assert_eq!(table_contents(&mut on.conn), table_contents(&mut off.conn), "seed {seed}: tables differ");
}

#[test]
fn point_path_answers_as_the_operator_tree_with_bees_on() {
    for seed in 0..6 {
        run_both(seed, "on", 1500);
    }
}

#[test]
fn point_path_answers_as_the_operator_tree_with_bees_off() {
    for seed in 100..106 {
        run_both(seed, "off", 1500);
    }
}

/// The statements the test exercises do take the point path (so the comparison
/// above compares two paths), and the setting switches it off.
#[test]
fn explain_verbose_shows_the_point_path() {
    let mut s = side("on", "on");
    let plan = |c: &mut Connection, sql: &str| -> String {
        let res = c.query(sql, &[]).unwrap();
        res.rows.iter().map(|r| r.0[0].to_string()).collect::<Vec<_>>().join("\n")
    };
    let text = plan(&mut s.conn, "EXPLAIN (VERBOSE) SELECT v FROM t WHERE k = 3");
    assert!(text.ends_with("Point Path: one lookup in t_pkey"), "{text}");
    let text = plan(&mut s.conn, "EXPLAIN (VERBOSE) SELECT k FROM t WHERE a = 3 AND b = 'b1'");
    assert!(text.ends_with("Point Path: one lookup in t_a_b_key"), "{text}");
    let text = plan(&mut s.conn, "EXPLAIN (VERBOSE) SELECT id, x, s FROM n WHERE g = 3");
    assert!(text.ends_with("Point Path: lookup in n_g (up to 32 rows, else the operator tree)"), "{text}");
    let text = plan(&mut s.conn, "EXPLAIN (VERBOSE) SELECT id, s FROM n WHERE id BETWEEN 3 AND 9 ORDER BY id DESC");
    assert!(text.contains("Index Scan Backward"), "{text}");
    assert!(text.ends_with("Point Path: lookup in n_pkey (up to 32 rows, else the operator tree)"), "{text}");
    let text = plan(&mut s.conn, "EXPLAIN (VERBOSE) SELECT v FROM t WHERE v > 3");
    assert!(text.ends_with("Point Path: no (not an index lookup of a few rows)"), "{text}");
    s.conn.set("point_path", "off").unwrap();
    let text = plan(&mut s.conn, "EXPLAIN (VERBOSE) SELECT v FROM t WHERE k = 3");
    assert!(text.ends_with("Point Path: off (point_path = off)"), "{text}");
}

/// A lookup by a non-unique key that finds more entries than the point path takes
/// (`POINT_MAX_ROWS`) is declined before anything is output and runs through the
/// operator tree: every row comes out once, in index order, as with the path off;
/// one that finds fewer runs on the point path with the same answer.
#[test]
fn non_unique_lookup_past_the_limit_runs_through_the_operator_tree() {
    for point_path in ["on", "off"] {
        let db = Database::open(":memory:").unwrap();
        let mut c = db.connect();
        c.set("point_path", point_path).unwrap();
        c.execute_batch(
            "CREATE TABLE m (id INTEGER PRIMARY KEY, g INTEGER, s TEXT);
             CREATE INDEX m_g ON m (g);
             INSERT INTO m SELECT i, CASE WHEN i <= 100 THEN 1 ELSE i END, 's' || i FROM generate_series(1, 5000) i;
             ANALYZE m;",
        )
        .unwrap();
        let select = c.prepare("SELECT id, s FROM m WHERE g = $1").unwrap();
        for (key, want) in [(1, 100usize), (7, 0), (150, 1)] {
            let res = select.execute(&mut c, &[Value::Integer(key)]).unwrap();
            assert_eq!(res.rows.len(), want, "point_path = {point_path}, g = {key}");
            let ids: Vec<String> = res.rows.iter().map(|r| r.0[0].to_string()).collect();
            let mut sorted = ids.clone();
            sorted.sort_by_key(|s| s.parse::<i64>().unwrap());
            assert_eq!(ids, sorted, "index order (g, tuple id) is id order here");
        }
        let res = c.query("UPDATE m SET s = 'x' WHERE g = 1", &[]).unwrap();
        assert_eq!(res.rows_affected, 100);
        let res = c.query("SELECT count(*) FROM m WHERE s = 'x'", &[]).unwrap();
        assert_eq!(res.rows[0].0[0].to_string(), "100");
    }
}
