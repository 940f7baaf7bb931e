//! Differential test of the point-statement path (`exec/point.rs`) against the
//! operator tree: two databases get the same random statements, one with
//! `point_path = on`, the other off, and every answer — rows with their value types,
//! counts, command tags, SQLSTATEs, messages and DETAILs — and the tables at the end
//! must be equal. The statements are prepared lookups, updates and deletes by a
//! unique key (one column, two columns, a text key), run with random keys: present,
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
    let rows = |r: &beedb_sql::QueryResult| format!("{:?}", r.rows.iter().map(|r| &r.0).collect::<Vec<_>>());
    format!("{}\n{}\n{}", rows(&a), rows(&b), rows(&c))
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
    let text = plan(&mut s.conn, "EXPLAIN (VERBOSE) SELECT v FROM t WHERE k > 3");
    assert!(text.ends_with("Point Path: no (not a lookup of one row by a unique key)"), "{text}");
    s.conn.set("point_path", "off").unwrap();
    let text = plan(&mut s.conn, "EXPLAIN (VERBOSE) SELECT v FROM t WHERE k = 3");
    assert!(text.ends_with("Point Path: off (point_path = off)"), "{text}");
}
