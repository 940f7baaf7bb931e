//! Everyday DML through the Rust API: RETURNING as a result set (prepared and
//! cached), identity columns and sequences (durable, not rolled back, two
//! connections), INSERT … ON CONFLICT, with the SQLSTATEs PostgreSQL gives.

use beedb_sql::{Database, Value};

fn ints(r: &beedb_sql::QueryResult) -> Vec<Vec<i64>> {
    r.rows
        .iter()
        .map(|row| (0..row.len()).map(|i| row.get::<i64>(i).unwrap()).collect())
        .collect()
}

#[test]
fn returning_is_a_result_set_with_the_written_rows() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER DEFAULT 7)").unwrap();
    let r = c.execute("INSERT INTO t (id) VALUES (1), (2) RETURNING id, v AS value", &[]).unwrap();
    assert!(r.has_rows());
    assert_eq!(r.tag, "INSERT 0 2");
    assert_eq!(r.rows_affected, 2);
    assert_eq!(r.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["id", "value"]);
    assert_eq!(ints(&r), [[1, 7], [2, 7]]);
    // Without RETURNING a write returns no result set.
    assert!(!c.execute("INSERT INTO t VALUES (3, 3)", &[]).unwrap().has_rows());
    // Zero rows: still a result set, with its columns.
    let r = c.execute("DELETE FROM t WHERE id = 99 RETURNING *", &[]).unwrap();
    assert!(r.has_rows());
    assert_eq!((r.rows.len(), r.columns.len(), r.tag.as_str()), (0, 2, "DELETE 0"));
}

#[test]
fn prepared_returning_statements_keep_their_columns_across_executions() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)").unwrap();
    let ins = c.prepare("INSERT INTO t VALUES ($1, $2) RETURNING v * 10").unwrap();
    let upd = c.prepare("UPDATE t SET v = v + $2 WHERE id = $1 RETURNING id, v").unwrap();
    let del = c.prepare("DELETE FROM t WHERE id = $1 RETURNING v").unwrap();
    for i in 0..5 {
        let r = ins.execute(&mut c, &[Value::Integer(i), Value::Integer(i)]).unwrap();
        assert_eq!(ints(&r), [[i as i64 * 10]]);
    }
    for round in 1..=3 {
        // The UPDATE's plan is cached after the first execution.
        let r = upd.execute(&mut c, &[Value::Integer(2), Value::Integer(1)]).unwrap();
        assert_eq!(ints(&r), [[2, 2 + round]]);
    }
    // A schema change between executions: the cached plan is not used after it.
    c.execute("ALTER TABLE t ADD COLUMN w TEXT", &[]).unwrap();
    let r = upd.execute(&mut c, &[Value::Integer(2), Value::Integer(1)]).unwrap();
    assert_eq!(ints(&r), [[2, 6]]);
    let r = del.execute(&mut c, &[Value::Integer(2)]).unwrap();
    assert_eq!(ints(&r), [[6]]);
    let r = del.execute(&mut c, &[Value::Integer(2)]).unwrap();
    assert!(r.rows.is_empty());
    assert_eq!(r.columns.len(), 1);
}

#[test]
fn returning_errors_carry_postgresql_states() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)").unwrap();
    let state = |c: &mut beedb_sql::Connection, sql: &str| c.execute(sql, &[]).unwrap_err().sqlstate;
    assert_eq!(state(&mut c, "INSERT INTO t VALUES (1, 1) RETURNING sum(v)"), "42803");
    assert_eq!(state(&mut c, "INSERT INTO t VALUES (1, 1) RETURNING nope"), "42703");
    assert_eq!(state(&mut c, "UPDATE t SET v = 1 RETURNING x.*"), "42P01");
    assert_eq!(state(&mut c, "DELETE FROM t RETURNING row_number() OVER ()"), "42P20");
    assert_eq!(state(&mut c, "INSERT INTO t VALUES (1, 0) RETURNING 1 / v"), "22012");
    // Nothing was written by the failed statements.
    assert_eq!(ints(&c.query("SELECT count(*) FROM t", &[]).unwrap()), [[0]]);
}

fn next(c: &mut beedb_sql::Connection, seq: &str) -> i64 {
    c.query(&format!("SELECT nextval('{seq}')"), &[]).unwrap().rows[0].get::<i64>(0).unwrap()
}

#[test]
fn sequence_values_are_not_rolled_back_and_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seq.beedb");
    {
        let db = Database::open(&path).unwrap();
        let mut c = db.connect();
        c.execute_batch("CREATE SEQUENCE s; CREATE TABLE t (id SERIAL PRIMARY KEY, v TEXT)").unwrap();
        assert_eq!(next(&mut c, "s"), 1);
        c.execute("BEGIN", &[]).unwrap();
        assert_eq!(next(&mut c, "s"), 2);
        c.execute("INSERT INTO t (v) VALUES ('rolled back')", &[]).unwrap();
        c.execute("ROLLBACK", &[]).unwrap();
        // The values the rolled-back block took are not given again.
        assert_eq!(next(&mut c, "s"), 3);
        let r = c.execute("INSERT INTO t (v) VALUES ('kept') RETURNING id", &[]).unwrap();
        assert_eq!(ints(&r), [[2]]);
        // Taken after the last commit: written when the database closes.
        assert_eq!(next(&mut c, "s"), 4);
        c.execute("BEGIN", &[]).unwrap();
        c.execute("INSERT INTO t (v) VALUES ('rolled back too')", &[]).unwrap();
        c.execute("ROLLBACK", &[]).unwrap();
    }
    let db = Database::open(&path).unwrap();
    let mut c = db.connect();
    assert_eq!(next(&mut c, "s"), 5);
    let r = c.execute("INSERT INTO t (v) VALUES ('after reopening') RETURNING id", &[]).unwrap();
    assert_eq!(ints(&r), [[4]]);
    // currval belongs to the session: a new connection has none yet.
    let e = db.connect().execute("SELECT currval('s')", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "55000");
    assert_eq!(ints(&c.query("SELECT currval('s')", &[]).unwrap()), [[5]]);
}

#[test]
fn a_created_sequence_rolled_back_leaves_nothing_behind() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute("BEGIN", &[]).unwrap();
    c.execute("CREATE SEQUENCE s START 100", &[]).unwrap();
    assert_eq!(next(&mut c, "s"), 100);
    c.execute("ROLLBACK", &[]).unwrap();
    assert_eq!(c.execute("SELECT nextval('s')", &[]).unwrap_err().sqlstate, "42P01");
    // The same id and name again: it starts afresh.
    c.execute("CREATE SEQUENCE s START 100", &[]).unwrap();
    assert_eq!(next(&mut c, "s"), 100);
}

#[test]
fn two_connections_never_get_the_same_value() {
    let db = Database::open(":memory:").unwrap();
    db.connect()
        .execute_batch("CREATE SEQUENCE s; CREATE TABLE t (id BIGSERIAL PRIMARY KEY, who INTEGER)")
        .unwrap();
    let threads: Vec<_> = (0..2)
        .map(|who| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut c = db.connect();
                let mut got = Vec::new();
                for _ in 0..200 {
                    got.push(next(&mut c, "s"));
                    // Writers take turns (one at a time); the SERIAL column's values
                    // stay unique under the primary key.
                    loop {
                        match c.execute("INSERT INTO t (who) VALUES ($1)", &[Value::Integer(who)]) {
                            Ok(_) => break,
                            Err(e) if e.sqlstate == "40001" || e.sqlstate == "55P03" => continue,
                            Err(e) => panic!("{e:?}"),
                        }
                    }
                }
                got
            })
        })
        .collect();
    let mut all: Vec<i64> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    all.sort();
    assert_eq!(all, (1..=400).collect::<Vec<_>>());
    let mut c = db.connect();
    assert_eq!(ints(&c.query("SELECT count(DISTINCT id), max(id) FROM t", &[]).unwrap()), [[400, 400]]);
}

#[test]
fn sequence_and_identity_errors_carry_postgresql_states() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE SEQUENCE s MAXVALUE 2; CREATE TABLE t (a SMALLINT GENERATED ALWAYS AS IDENTITY, b TEXT)",
    )
    .unwrap();
    let state = |c: &mut beedb_sql::Connection, sql: &str| c.execute(sql, &[]).unwrap_err().sqlstate;
    assert_eq!(state(&mut c, "SELECT currval('s')"), "55000");
    next(&mut c, "s");
    next(&mut c, "s");
    assert_eq!(state(&mut c, "SELECT nextval('s')"), "2200H");
    assert_eq!(state(&mut c, "SELECT setval('s', 3)"), "22003");
    assert_eq!(state(&mut c, "SELECT nextval('t')"), "42809");
    assert_eq!(state(&mut c, "SELECT nextval('nope')"), "42P01");
    assert_eq!(state(&mut c, "CREATE SEQUENCE s"), "42P07");
    assert_eq!(state(&mut c, "CREATE SEQUENCE x INCREMENT 0"), "22023");
    assert_eq!(state(&mut c, "INSERT INTO t VALUES (1, 'x')"), "428C9");
    assert_eq!(state(&mut c, "UPDATE t SET a = 1"), "428C9");
    assert_eq!(state(&mut c, "DROP SEQUENCE t_a_seq"), "2BP01");
    assert_eq!(state(&mut c, "CREATE TABLE u (a TEXT GENERATED ALWAYS AS IDENTITY)"), "22023");
}

#[test]
fn prepared_statements_follow_sequence_changes() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE SEQUENCE s; CREATE TABLE t (id SERIAL, v INTEGER)").unwrap();
    let take = c.prepare("SELECT nextval('s')").unwrap();
    let insert = c.prepare("INSERT INTO t (v) VALUES ($1) RETURNING id").unwrap();
    let renumber = c.prepare("UPDATE t SET id = DEFAULT WHERE v = $1 RETURNING id").unwrap();
    let run = |c: &mut beedb_sql::Connection, s: &beedb_sql::Statement, p: &[Value]| ints(&s.execute(c, p).unwrap());
    assert_eq!(run(&mut c, &take, &[]), [[1]]);
    assert_eq!(run(&mut c, &take, &[]), [[2]]);
    assert_eq!(run(&mut c, &insert, &[Value::Integer(7)]), [[1]]);
    assert_eq!(run(&mut c, &renumber, &[Value::Integer(7)]), [[2]]);
    assert_eq!(run(&mut c, &renumber, &[Value::Integer(7)]), [[3]]);
    // The sequence dropped and made again, with another start: the cached SELECT
    // reaches the new one.
    c.execute_batch("DROP SEQUENCE s; CREATE SEQUENCE s START 50").unwrap();
    assert_eq!(run(&mut c, &take, &[]), [[50]]);
    // The table made again with an identity column starting elsewhere: the cached
    // INSERT and UPDATE number rows from the new sequence.
    c.execute_batch(
        "DROP TABLE t; CREATE TABLE t (id INTEGER GENERATED BY DEFAULT AS IDENTITY (START WITH 1000), v INTEGER)",
    )
    .unwrap();
    assert_eq!(run(&mut c, &insert, &[Value::Integer(7)]), [[1000]]);
    assert_eq!(run(&mut c, &renumber, &[Value::Integer(7)]), [[1001]]);
    // setval between executions moves what they get next.
    c.execute("SELECT setval('t_id_seq', 5000)", &[]).unwrap();
    assert_eq!(run(&mut c, &insert, &[Value::Integer(8)]), [[5001]]);
    c.execute("DROP SEQUENCE s", &[]).unwrap();
    assert_eq!(take.execute(&mut c, &[]).unwrap_err().sqlstate, "42P01");
}

#[test]
fn on_conflict_errors_carry_postgresql_states() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT, u INTEGER UNIQUE); INSERT INTO t VALUES (1, 'a', 1)")
        .unwrap();
    let state = |c: &mut beedb_sql::Connection, sql: &str| c.execute(sql, &[]).unwrap_err().sqlstate;
    assert_eq!(state(&mut c, "INSERT INTO t VALUES (2, 'b'), (2, 'c') ON CONFLICT (k) DO UPDATE SET v = excluded.v"), "21000");
    assert_eq!(state(&mut c, "INSERT INTO t VALUES (1) ON CONFLICT (v) DO NOTHING"), "42P10");
    assert_eq!(state(&mut c, "INSERT INTO t VALUES (1) ON CONFLICT ON CONSTRAINT nope DO NOTHING"), "42704");
    assert_eq!(state(&mut c, "INSERT INTO t VALUES (1) ON CONFLICT DO UPDATE SET v = 'x'"), "42601");
    assert_eq!(state(&mut c, "INSERT INTO t VALUES (1) ON CONFLICT (k) DO UPDATE SET v = v"), "42702");
    assert_eq!(state(&mut c, "INSERT INTO t VALUES (2, 'b', 1) ON CONFLICT (k) DO NOTHING"), "23505");
    assert_eq!(state(&mut c, "INSERT INTO t VALUES (1) ON CONFLICT (k) DO UPDATE SET k = 1 / 0"), "22012");
    // Nothing of the failed statements stayed.
    assert_eq!(ints(&c.query("SELECT count(*), max(k) FROM t", &[]).unwrap()), [[1, 1]]);
}

#[test]
fn a_prepared_upsert_follows_index_changes() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE counts (name TEXT, hits INTEGER)").unwrap();
    let upsert = c
        .prepare("INSERT INTO counts VALUES ($1, 1) ON CONFLICT (name) DO UPDATE SET hits = counts.hits + 1 RETURNING hits")
        .unwrap();
    // No unique index on name yet: 42P10, as PostgreSQL.
    assert_eq!(upsert.execute(&mut c, &[Value::Text("a".into())]).unwrap_err().sqlstate, "42P10");
    c.execute("CREATE UNIQUE INDEX counts_name ON counts (name)", &[]).unwrap();
    for expected in 1..=3 {
        let r = upsert.execute(&mut c, &[Value::Text("a".into())]).unwrap();
        assert_eq!(ints(&r), [[expected]]);
    }
    assert_eq!(ints(&upsert.execute(&mut c, &[Value::Text("b".into())]).unwrap()), [[1]]);
    // The index dropped: the statement planned before no longer finds an arbiter.
    c.execute("DROP INDEX counts_name", &[]).unwrap();
    assert_eq!(upsert.execute(&mut c, &[Value::Text("a".into())]).unwrap_err().sqlstate, "42P10");
    // A primary key on a new table of that name takes its place.
    c.execute_batch("DROP TABLE counts; CREATE TABLE counts (name TEXT PRIMARY KEY, hits INTEGER)").unwrap();
    assert_eq!(ints(&upsert.execute(&mut c, &[Value::Text("a".into())]).unwrap()), [[1]]);
    assert_eq!(ints(&upsert.execute(&mut c, &[Value::Text("a".into())]).unwrap()), [[2]]);
}

#[test]
fn prepared_update_from_and_delete_using_are_cached_and_change_each_row_once() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER);
         CREATE TABLE s (id INTEGER, k INTEGER);
         INSERT INTO t VALUES (1, 0), (2, 0), (3, 0);
         INSERT INTO s VALUES (1, 1), (2, 1), (2, 2), (3, 2);",
    )
    .unwrap();
    let bump = c.prepare("UPDATE t SET v = t.v + 1 FROM s WHERE s.id = t.id AND s.k >= $1 RETURNING t.id, t.v").unwrap();
    for round in 1..=3 {
        // Row 2 joins two rows of s and is still changed once per execution.
        let mut r = ints(&bump.execute(&mut c, &[Value::Integer(1)]).unwrap());
        r.sort();
        assert_eq!(r, [[1, round], [2, round], [3, round]]);
    }
    let r = ints(&bump.execute(&mut c, &[Value::Integer(2)]).unwrap());
    assert_eq!(r.len(), 2);
    let remove = c.prepare("DELETE FROM t USING s WHERE s.id = t.id AND s.k = $1 RETURNING t.id").unwrap();
    let mut r = ints(&remove.execute(&mut c, &[Value::Integer(2)]).unwrap());
    r.sort();
    assert_eq!(r, [[2], [3]]);
    assert_eq!(remove.execute(&mut c, &[Value::Integer(2)]).unwrap().rows_affected, 0);
    assert_eq!(ints(&c.query("SELECT id, v FROM t", &[]).unwrap()), [[1, 3]]);
    let state = |c: &mut beedb_sql::Connection, sql: &str| c.execute(sql, &[]).unwrap_err().sqlstate;
    assert_eq!(state(&mut c, "UPDATE t SET v = 1 FROM t"), "42712");
    assert_eq!(state(&mut c, "DELETE FROM t USING s WHERE id = 1"), "42702");
    assert_eq!(state(&mut c, "DELETE FROM t USING nope"), "42P01");
}

/// Unique and NOT NULL violations carry PostgreSQL's DETAIL, from every writer:
/// INSERT, INSERT … SELECT, UPDATE, ON CONFLICT DO UPDATE and COPY.
#[test]
fn constraint_violations_carry_postgresqls_detail() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT NOT NULL, c BOOLEAN, UNIQUE (b, c));
         INSERT INTO t VALUES (1, 'x', true), (2, 'y', false)",
    )
    .unwrap();
    let detail = |c: &mut beedb_sql::Connection, sql: &str| {
        let e = c.execute(sql, &[]).unwrap_err();
        (e.sqlstate, e.detail.unwrap_or_default())
    };
    let taken = |key: &str| ("23505", format!("Key {key} already exists."));
    assert_eq!(detail(&mut c, "INSERT INTO t VALUES (1, 'z', NULL)"), taken("(a)=(1)"));
    assert_eq!(detail(&mut c, "INSERT INTO t VALUES (3, 'x', true)"), taken("(b, c)=(x, t)"));
    assert_eq!(detail(&mut c, "INSERT INTO t SELECT a + 1, b, c FROM t WHERE a = 1"), taken("(a)=(2)"));
    assert_eq!(detail(&mut c, "UPDATE t SET a = 1 WHERE a = 2"), taken("(a)=(1)"));
    assert_eq!(
        detail(&mut c, "INSERT INTO t VALUES (1, 'q') ON CONFLICT (a) DO UPDATE SET a = 2"),
        taken("(a)=(2)")
    );
    let failing = |row: &str| ("23502", format!("Failing row contains {row}."));
    assert_eq!(detail(&mut c, "INSERT INTO t VALUES (5, NULL, NULL)"), failing("(5, null, null)"));
    assert_eq!(detail(&mut c, "UPDATE t SET b = NULL WHERE a = 2"), failing("(2, null, f)"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.csv");
    std::fs::write(&file, "7,w,\n1,v,\n").unwrap();
    let copy = format!("COPY t FROM '{}' (FORMAT csv)", file.display());
    let e = c.execute(&copy, &[]).unwrap_err();
    assert_eq!(e.detail.as_deref(), Some("Key (a)=(1) already exists."));
    assert!(e.message.ends_with("line 2)"), "{}", e.message);
    // Other errors have none.
    assert_eq!(detail(&mut c, "SELECT 1/0"), ("22012", String::new()));
}

/// CHECK violations (23514) name the constraint and carry the failing row as DETAIL,
/// from every writer; NULL passes; the failed statement leaves no row behind.
#[test]
fn check_violations_carry_the_failing_row() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT CHECK (b <> 'bad'), n INTEGER NOT NULL CHECK (n >= 0));
         INSERT INTO t VALUES (1, 'x', 0), (2, NULL, 5)",
    )
    .unwrap();
    let failing = |c: &mut beedb_sql::Connection, sql: &str| {
        let e = c.execute(sql, &[]).unwrap_err();
        (e.sqlstate, e.message, e.detail.unwrap_or_default())
    };
    let check = |name: &str, row: &str| {
        (
            "23514",
            format!("new row for relation \"t\" violates check constraint \"{name}\""),
            format!("Failing row contains {row}."),
        )
    };
    assert_eq!(failing(&mut c, "INSERT INTO t VALUES (3, 'bad', 1)"), check("t_b_check", "(3, bad, 1)"));
    assert_eq!(failing(&mut c, "INSERT INTO t SELECT a + 10, b, -1 FROM t WHERE a = 1"), check("t_n_check", "(11, x, -1)"));
    assert_eq!(failing(&mut c, "UPDATE t SET n = n - 1 WHERE a = 1"), check("t_n_check", "(1, x, -1)"));
    assert_eq!(
        failing(&mut c, "INSERT INTO t VALUES (2, 'y', 0) ON CONFLICT (a) DO UPDATE SET b = 'bad'"),
        check("t_b_check", "(2, bad, 5)")
    );
    // NOT NULL is tested before CHECK, as in PostgreSQL.
    assert_eq!(failing(&mut c, "INSERT INTO t VALUES (4, 'bad', NULL)").0, "23502");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.csv");
    std::fs::write(&file, "7,w,1\n8,,-3\n").unwrap();
    let copy = format!("COPY t FROM '{}' (FORMAT csv)", file.display());
    let e = c.execute(&copy, &[]).unwrap_err();
    assert_eq!(e.sqlstate, "23514");
    assert_eq!(e.detail.as_deref(), Some("Failing row contains (8, null, -3)."));
    assert!(e.message.ends_with("line 2)"), "{}", e.message);
    let r = c.query("SELECT count(*) FROM t", &[]).unwrap();
    assert_eq!(r.rows[0].get::<i64>(0).unwrap(), 2);
    std::fs::write(&file, "7,w,1\n8,,3\n").unwrap();
    c.execute(&copy, &[]).unwrap();
}
