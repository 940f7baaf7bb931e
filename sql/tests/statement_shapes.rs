//! Statement shapes (`engine/shape.rs`) against the same statements run with
//! `statement_shapes = off`: every statement gives the same columns, types, rows and
//! tag, or the same error (SQLSTATE, message and position), and leaves a block in
//! the same state, whether it runs through `execute`, `query_stream` (Python's
//! cursors) or `execute_batch`; a statement that differs from an earlier one only in
//! its literals is not parsed again.

use beedb_sql::{Connection, Database, QueryResult, Value};

/// How a statement is run.
#[derive(Clone, Copy, Debug)]
enum Via {
    Execute,
    Stream,
    Batch,
}

const VIAS: [Via; 3] = [Via::Execute, Via::Stream, Via::Batch];

fn run_via(c: &mut Connection, sql: &str, via: Via) -> beedb_sql::Result<QueryResult> {
    match via {
        Via::Execute => c.execute(sql, &[]),
        Via::Stream => c.query_stream(sql, &[]).and_then(|s| s.into_result()),
        Via::Batch => c.execute_batch(sql).map(|mut r| r.pop().expect("one result")),
    }
}

const SETUP: &str = "
CREATE TABLE t (
    k INTEGER PRIMARY KEY, s SMALLINT, b BIGINT, n NUMERIC(10,2), f DOUBLE PRECISION,
    tx TEXT, vc VARCHAR(5), ch CHAR(3), bo BOOLEAN, d DATE, ts TIMESTAMP, u INTEGER UNIQUE);
CREATE INDEX t_s ON t (s);
CREATE TABLE w (a INTEGER, b TEXT);
CREATE INDEX w_a ON w (a);
INSERT INTO t SELECT g, g % 7, g::bigint * 1000000000, g / 3.0, g / 7.0, 'tx' || g, 'v' || (g % 100),
    'c' || (g % 10), g % 2 = 0, DATE '2020-01-01' + g, TIMESTAMP '2020-01-01 00:00:00' + g * INTERVAL '1 hour', g + 10000
  FROM generate_series(1, 300) g;
INSERT INTO w SELECT g % 50, 'b' || g FROM generate_series(1, 200) g;
";

/// What a statement gave, comparable across the two connections.
fn outcome(c: &mut Connection, sql: &str) -> String {
    outcome_via(c, sql, Via::Execute)
}

fn outcome_via(c: &mut Connection, sql: &str, via: Via) -> String {
    match run_via(c, sql, via) {
        Ok(r) => format!("{:?} {:?} {}", r.columns, r.rows, r.tag),
        Err(e) => format!("error {} {:?} at {:?}", e.sqlstate, e.message, e.position),
    }
}

fn pair() -> (Connection, Connection) {
    let on = Database::open(":memory:").unwrap().connect();
    let mut off = Database::open(":memory:").unwrap().connect();
    off.set("statement_shapes", "off").unwrap();
    let mut on = on;
    on.execute_batch(SETUP).unwrap();
    off.execute_batch(SETUP).unwrap();
    (on, off)
}

/// Literals of every kind, each put into every template.
const LITERALS: &[&str] = &[
    "1", "7", "0", "007", "300", "301", "-5", "32767", "32768", "2147483647", "2147483648", "-2147483648",
    "9223372036854775807", "9223372036854775808", "99999999999999999999999999999999999999",
    "999999999999999999999999999999999999999999", "1.5", "2.50", "0.001", "1e3", ".5", "5.", "NULL", "TRUE",
    "'1'", "'7'", "'abc'", "''", "'it''s'", "'c1'", "'c1 '", "'abcdef'", "'v7'", "'2020-01-05'",
    "'2020-01-01 05:00:00'", "'t'", "'tx5'", "E'tx\\x35'", "E'a\\'b'", "$$tx6$$", "$q$it's$q$", "' 12 '",
    "'1.5'", "'99999999999'", "'NaN'", "'infinity'", "DATE '2020-01-03'", "'1'::int8", "1 /* c */",
    "/* c */ 2", "3 -- c\n",
];

const TEMPLATES: &[&str] = &[
    "SELECT * FROM t WHERE k = {}",
    "SELECT k, tx FROM t WHERE u = {}",
    "SELECT k FROM t WHERE s = {}",
    "SELECT k FROM t WHERE b = {}",
    "SELECT k FROM t WHERE n = {}",
    "SELECT k FROM t WHERE f = {}",
    "SELECT k FROM t WHERE tx = {}",
    "SELECT k FROM t WHERE vc = {}",
    "SELECT k, ch FROM t WHERE ch = {}",
    "SELECT k FROM t WHERE bo = {}",
    "SELECT k FROM t WHERE d = {}",
    "SELECT k FROM t WHERE ts = {}",
    "SELECT k FROM t WHERE k = {} AND s < 3",
    "SELECT k FROM t WHERE k <> {} AND k < 3",
    "SELECT k FROM t WHERE k < {} ORDER BY k LIMIT 3",
    "SELECT k FROM t WHERE k >= {} ORDER BY k LIMIT 3",
    "SELECT k FROM t WHERE k IN (1, {}, 3) ORDER BY k",
    "SELECT k FROM t WHERE tx IN ('tx1', {}) ORDER BY k",
    "SELECT a, b FROM w WHERE a = {} ORDER BY b",
    "SELECT count(*) FROM w WHERE a = {}",
    "SELECT * FROM (VALUES ({}, 2), (3, 4)) v(x, y)",
    "SELECT k FROM t WHERE k = {} LIMIT 1",
    "SELECT k FROM t JOIN w ON w.a = t.k WHERE t.k = {}",
    "SELECT k, (SELECT max(a) FROM w WHERE a = {}) FROM t WHERE k = 1",
    "UPDATE t SET s = {} WHERE k = 5 RETURNING s",
    "UPDATE t SET tx = {} WHERE k = 6 RETURNING tx",
    "UPDATE t SET n = {} WHERE k = 7 RETURNING n",
    "UPDATE t SET vc = {} WHERE k = 8 RETURNING vc",
    "UPDATE t SET ch = {} WHERE k = 9 RETURNING ch",
    "UPDATE t SET d = {} WHERE k = 10 RETURNING d",
    "UPDATE t SET b = b + 1 WHERE k = {} RETURNING b",
    "UPDATE t SET f = {} WHERE u = 10011 RETURNING f",
    "DELETE FROM w WHERE a = {} AND b = 'b1'",
    "INSERT INTO w VALUES ({}, 'x')",
    "INSERT INTO w VALUES (1, {}) RETURNING *",
    "INSERT INTO t (k, s, tx, u) VALUES (1000, {}, 'n', 20000) ON CONFLICT (k) DO UPDATE SET s = excluded.s RETURNING s",
    "INSERT INTO t (k, tx, ch, u) VALUES ({}, 'z', 'ab', 30000) RETURNING k",
    "DELETE FROM t WHERE k = 30000",
    "SELECT k FROM t WHERE tx = {} OR k = 2 ORDER BY k",
    "SELECT length({}) FROM t WHERE k = 1",
    "SELECT k FROM t WHERE k = {}::int8",
    // The same literal twice, where the binder matches expressions by equality.
    "SELECT k > {}, count(*) FROM t GROUP BY k > {} ORDER BY 1",
    "SELECT count(*) FROM t GROUP BY k > {} HAVING k > {} ORDER BY 1",
    "SELECT DISTINCT k > {} AS x FROM t ORDER BY k > {}",
    "SELECT sum(count(*)) OVER (PARTITION BY k > {}) FROM t GROUP BY k > {} ORDER BY 1",
    "SELECT k = {} FROM t WHERE k < 3 UNION SELECT k = {} FROM t WHERE k < 3 ORDER BY 1",
];

#[test]
fn shaped_statements_answer_as_their_literal_text() {
    let (mut on, mut off) = pair();
    let mut n = 0;
    let mut wrong = Vec::new();
    // Twice through `execute` (the second time from the shape cache), then through
    // `query_stream` and `execute_batch`.
    for (round, via) in [Via::Execute, Via::Execute, Via::Stream, Via::Batch].into_iter().enumerate() {
        for template in TEMPLATES {
            for lit in LITERALS {
                let sql = template.replace("{}", lit);
                let (a, b) = (outcome_via(&mut on, &sql, via), outcome_via(&mut off, &sql, via));
                if a != b {
                    wrong.push(format!("round {round} ({via:?}): {sql}\n  shapes on:  {a}\n  shapes off: {b}"));
                }
                n += 1;
            }
        }
    }
    // The same in a block: an error aborts both blocks alike.
    for (i, lit) in LITERALS.iter().enumerate() {
        for template in ["UPDATE t SET s = {} WHERE k = 11", "SELECT k FROM t WHERE k = {}", "INSERT INTO w VALUES ({}, 'y')"] {
            let sql = template.replace("{}", lit);
            let via = VIAS[i % 3];
            for c in [&mut on, &mut off] {
                c.execute("BEGIN", &[]).unwrap();
            }
            let (a, b) = (outcome_via(&mut on, &sql, via), outcome_via(&mut off, &sql, via));
            if a != b {
                wrong.push(format!("in a block ({via:?}): {sql}\n  shapes on:  {a}\n  shapes off: {b}"));
            }
            let (a, b) = (outcome(&mut on, "SELECT s FROM t WHERE k = 11"), outcome(&mut off, "SELECT s FROM t WHERE k = 11"));
            if a != b {
                wrong.push(format!("after {sql} in a block\n  shapes on:  {a}\n  shapes off: {b}"));
            }
            for c in [&mut on, &mut off] {
                c.execute("ROLLBACK", &[]).unwrap();
            }
        }
    }
    let all = |c: &mut Connection| {
        let t = outcome(c, "SELECT * FROM t ORDER BY k");
        let w = outcome(c, "SELECT * FROM w ORDER BY a, b");
        (t, w)
    };
    assert!(wrong.is_empty(), "{} of {n} statements differ:\n{}", wrong.len(), wrong[..wrong.len().min(40)].join("\n"));
    assert_eq!(all(&mut on), all(&mut off));
    assert!(n > 6000);
}

#[test]
fn a_statement_differing_only_in_literals_is_not_parsed_again() {
    let (mut c, _) = pair();
    let run = |c: &mut Connection, sql: &str| c.execute(sql, &[]).unwrap();
    assert_eq!(run(&mut c, "SELECT tx FROM t WHERE k = 5").rows[0].0[0], Value::Text("tx5".into()));
    let parsed = c.statements_parsed();
    for k in 6..50 {
        let r = run(&mut c, &format!("SELECT tx FROM t WHERE k = {k}"));
        assert_eq!(r.rows[0].0[0], Value::Text(format!("tx{k}")));
        run(&mut c, &format!("UPDATE t SET tx = 'y{k}', s = {} WHERE k = {k}", k % 5));
        run(&mut c, &format!("INSERT INTO w VALUES ({k}, 'n{k}')"));
    }
    // The UPDATE's and the INSERT's shapes were parsed once each.
    assert_eq!(c.statements_parsed(), parsed + 2);
    assert_eq!(run(&mut c, "SELECT tx, s FROM t WHERE k = 49").rows[0].0, vec![Value::Text("y49".into()), Value::SmallInt(4)]);
    // A shape whose plan could depend on its literal (a range) is declined, once.
    run(&mut c, "SELECT k FROM t WHERE k < 5");
    let parsed = c.statements_parsed();
    run(&mut c, "SELECT k FROM t WHERE k < 6");
    assert_eq!(c.statements_parsed(), parsed + 1, "the literal text is parsed, the declined shape not again");
    // Off: every distinct text is parsed.
    c.execute("SET statement_shapes = off", &[]).unwrap();
    let parsed = c.statements_parsed();
    run(&mut c, "SELECT tx FROM t WHERE k = 77");
    run(&mut c, "SELECT tx FROM t WHERE k = 78");
    assert_eq!(c.statements_parsed(), parsed + 2);
}

#[test]
fn streams_and_batches_run_as_their_shape() {
    let (mut c, _) = pair();
    for via in [Via::Stream, Via::Batch] {
        let run = |c: &mut Connection, sql: &str| run_via(c, sql, via).unwrap();
        run(&mut c, "SELECT tx FROM t WHERE k = 5");
        run(&mut c, "UPDATE t SET tx = 'z' WHERE k = 5");
        let parsed = c.statements_parsed();
        for k in 6..40 {
            let r = run(&mut c, &format!("SELECT tx FROM t WHERE k = {k}"));
            assert_eq!(r.rows[0].0[0], Value::Text(format!("tx{k}")), "{via:?}");
            assert_eq!(run(&mut c, &format!("UPDATE t SET tx = 'tx{k}' WHERE k = {k}")).tag, "UPDATE 1");
        }
        assert_eq!(c.statements_parsed(), parsed, "{via:?}: no statement parsed again");
    }
    // A batch of two statements is parsed as a whole (not shaped) and runs both.
    let r = c.execute_batch("UPDATE t SET s = 3 WHERE k = 7; SELECT s FROM t WHERE k = 7").unwrap();
    assert_eq!(r[1].rows[0].0[0], Value::SmallInt(3));
}

#[test]
fn declined_shapes_never_push_live_shapes_out() {
    let (mut c, _) = pair();
    let run = |c: &mut Connection, sql: &str| c.execute(sql, &[]).unwrap();
    // Ten live shapes (their texts differ in the column's alias).
    let live = |i: usize, k: usize| format!("SELECT tx AS a{i} FROM t WHERE k = {k}");
    for i in 0..10 {
        run(&mut c, &live(i, 5));
    }
    // Two hundred declined ones (a range: the plan depends on the literal).
    for i in 0..200 {
        run(&mut c, &format!("SELECT k AS b{i} FROM t WHERE k < 5"));
    }
    let parsed = c.statements_parsed();
    for i in 0..10 {
        assert_eq!(run(&mut c, &live(i, 6 + i)).rows[0].0[0], Value::Text(format!("tx{}", 6 + i)));
    }
    assert_eq!(c.statements_parsed(), parsed, "the live shapes are still cached");
    // The declined ones are remembered too: their texts are parsed, their shapes not.
    for i in 0..200 {
        run(&mut c, &format!("SELECT k AS b{i} FROM t WHERE k < 6"));
    }
    assert_eq!(c.statements_parsed(), parsed + 200);
}
