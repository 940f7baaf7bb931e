//! The peer adapters end to end: DuckDB (Python worker) and PostgreSQL (a private
//! server). A peer that is not installed is skipped with a note, so the suite runs
//! on any machine; `scripts/install-peers` installs both.

use std::path::Path;
use std::time::Duration;

use beedb_lab::engine::duckdb::DuckdbPeer;
use beedb_lab::engine::postgres::PostgresServer;
use beedb_lab::engine::{Cell, Durability, Engine, EngineKind, Param, Peers, Place};

const SCHEMA: &str =
    "CREATE TABLE t (i integer, d double precision, n numeric(15,2), c char(10), v varchar(40), dt date)";

const DATA: &str = "1|1.5|12.34|ab|hello world|2024-01-02\n\
                    2|-2.25|3.00|cd|x|1999-12-31\n\
                    3|0|100.5|efghijklmn|zz|2000-02-29\n";

fn int(v: i64) -> Cell {
    Cell::Int(v)
}

fn text(s: &str) -> Cell {
    Cell::Text(s.to_string())
}

fn rows(engine: &mut dyn Engine, sql: &str, params: &[Param]) -> Vec<Vec<Cell>> {
    match engine.run(sql, params) {
        Ok(outcome) => outcome.rows,
        Err(e) => panic!("{}: {sql}: {e}", engine.kind()),
    }
}

fn one(engine: &mut dyn Engine, sql: &str, params: &[Param]) -> Cell {
    let rows = rows(engine, sql, params);
    assert_eq!(rows.len(), 1, "{sql}: {rows:?}");
    assert_eq!(rows[0].len(), 1, "{sql}: {rows:?}");
    rows[0][0].clone()
}

/// What both peers must do alike. `char_pad` is how the engine returns the
/// char(10) value "ab": PostgreSQL pads it, DuckDB's CHAR is VARCHAR.
fn exercise(engine: &mut dyn Engine, dir: &Path, char_pad: &str) {
    engine.batch(SCHEMA).unwrap();
    let file = dir.join("t.tbl");
    std::fs::write(&file, DATA).unwrap();
    assert_eq!(engine.bulk_load("t", &file).unwrap(), 3);

    let all = engine.run("SELECT i, d, n, c, v, dt, NULL FROM t ORDER BY i", &[]).unwrap();
    assert!(all.elapsed > Duration::ZERO);
    assert_eq!(all.affected, 0);
    assert_eq!(
        all.rows[0],
        vec![
            int(1),
            Cell::Float(1.5),
            Cell::Float(12.34),
            text(&format!("ab{char_pad}")),
            text("hello world"),
            text("2024-01-02"),
            Cell::Null
        ]
    );
    // numeric(15,2) 3.00 is integral: an Int, as BeeDB's DECIMAL gives it.
    assert_eq!(all.rows[1][..3], [int(2), Cell::Float(-2.25), int(3)]);
    assert_eq!(all.rows[2][3..6], [text("efghijklmn"), text("zz"), text("2000-02-29")]);

    // Parameters of every kind, against columns of every kind: the server infers
    // int4, float8, numeric and date for them.
    assert_eq!(one(engine, "SELECT v FROM t WHERE i = $1", &[Param::Int(2)]), text("x"));
    assert_eq!(one(engine, "SELECT v FROM t WHERE i = $1", &[Param::Float(3.0)]), text("zz"));
    assert_eq!(one(engine, "SELECT i FROM t WHERE n = $1", &[Param::Float(12.34)]), int(1));
    assert_eq!(one(engine, "SELECT i FROM t WHERE n = $1", &[Param::Int(3)]), int(2));
    assert_eq!(one(engine, "SELECT i FROM t WHERE dt = $1", &[Param::Text("1999-12-31".into())]), int(2));
    assert_eq!(
        one(engine, "SELECT count(*) FROM t WHERE d > $1 AND v <> $2", &[Param::Int(-1), Param::Text("zz".into())]),
        int(1)
    );
    // Prepared once, run again with other values.
    assert_eq!(one(engine, "SELECT v FROM t WHERE i = $1", &[Param::Int(1)]), text("hello world"));
    assert_eq!(one(engine, "SELECT sum(n) FROM t", &[]), Cell::Float(115.84));
    assert_eq!(one(engine, "SELECT $1 + 1", &[Param::Int(41)]), int(42));

    let update = engine.run("UPDATE t SET v = $1 WHERE i >= $2", &[Param::Text("u".into()), Param::Int(2)]).unwrap();
    assert_eq!(update.affected, 2);
    assert!(update.rows.is_empty());
    assert_eq!(engine.run("UPDATE t SET d = d + 1 WHERE i = 1", &[]).unwrap().affected, 1);
    assert_eq!(engine.run("DELETE FROM t WHERE i = 99", &[]).unwrap().affected, 0);

    engine.set_durability(Durability::Normal).unwrap();
    engine.begin_write().unwrap();
    let insert = engine
        .run(
            "INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                Param::Int(4),
                Param::Float(0.5),
                Param::Float(7.25),
                Param::Text("q".into()),
                Param::Text("r".into()),
                Param::Text("2020-06-30".into()),
            ],
        )
        .unwrap();
    assert_eq!(insert.affected, 1);
    engine.run("COMMIT", &[]).unwrap();
    engine.set_durability(Durability::Full).unwrap();
    assert_eq!(one(engine, "SELECT count(*) FROM t", &[]), int(4));
    assert_eq!(one(engine, "SELECT n FROM t WHERE i = 4", &[]), Cell::Float(7.25));

    engine.begin_write().unwrap();
    engine.run("DELETE FROM t", &[]).unwrap();
    engine.run("ROLLBACK", &[]).unwrap();
    assert_eq!(one(engine, "SELECT count(*) FROM t", &[]), int(4));

    assert!(engine.bytes_on_disk().unwrap() > 0);

    // Errors are errors, and the connection goes on working.
    let bad = engine.run("SELEC 1", &[]).unwrap_err();
    assert!(!bad.retryable, "{bad}");
    assert!(engine.run("SELECT nope FROM t", &[]).is_err());
    assert!(engine.run("SELECT i FROM t WHERE i = $1", &[Param::Text("not a number".into())]).is_err());
    let broken = dir.join("broken.tbl");
    std::fs::write(&broken, "5|1|1|a|b|2024-01-01\nsix|1|1|a|b|2024-01-01\n").unwrap();
    let bad = engine.bulk_load("t", &broken).unwrap_err();
    assert!(bad.message.contains("six"), "{bad}");
    assert!(engine.bulk_load("t", &dir.join("missing.tbl")).is_err());
    assert_eq!(one(engine, "SELECT count(*) FROM t", &[]), int(4));
}

#[test]
fn duckdb_end_to_end() {
    let peer = match DuckdbPeer::find() {
        Ok(peer) => peer,
        Err(e) if e.message.contains("cannot import duckdb") || e.message.contains("cannot run") => {
            println!("skipped: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert!(!peer.version().is_empty());
    let dir = tempfile::tempdir().unwrap();
    let mut engine = peer.open(&dir.path().join("lab.duckdb")).unwrap();
    assert_eq!(engine.kind(), EngineKind::Duckdb);
    exercise(&mut engine, dir.path(), "");
    assert!(engine.connect_another().is_err());
    assert_eq!(engine.explain_analyze("SELECT 1").unwrap(), None);
    // Non-finite floats and wide integers cross the pipe.
    assert_eq!(one(&mut engine, "SELECT $1::double", &[Param::Float(f64::INFINITY)]), Cell::Float(f64::INFINITY));
    assert_eq!(one(&mut engine, "SELECT 1e20::hugeint", &[]), Cell::Float(1e20));
    drop(engine);
    assert!(dir.path().join("lab.duckdb").exists());

    // Through the lab's front door too.
    let peers = Peers::find(&[EngineKind::Duckdb], dir.path(), &mut |note| panic!("{note}"));
    assert!(peers.available(EngineKind::Duckdb));
    assert_eq!(peers.version(EngineKind::Duckdb), peer.version());
    let place = Place { dir: dir.path().join("work"), name: "fresh".into() };
    let mut fresh = peers.open_fresh(EngineKind::Duckdb, &place).unwrap();
    assert_eq!(one(fresh.as_mut(), "SELECT 40 + 2", &[]), int(42));
}

/// A server, or `None` (and a note) when PostgreSQL is not installed.
fn start_postgres(dir: &Path) -> Option<PostgresServer> {
    match PostgresServer::start(dir) {
        Ok(server) => Some(server),
        Err(e) if e.message.contains("no PostgreSQL server programs") => {
            println!("skipped: {e}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn running_as_root() -> bool {
    std::process::Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[test]
fn postgres_end_to_end() {
    let work = tempfile::tempdir().unwrap();
    // Reachable for the postgres user: the data directory goes where it is asked to.
    std::fs::set_permissions(work.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let dir = work.path().join("postgres");
    let Some(server) = start_postgres(&dir) else { return };
    assert_eq!(server.data_dir(), dir);
    assert!(server.version().starts_with(|c: char| c.is_ascii_digit()), "{}", server.version());
    let socket = server.socket_path();
    assert!(socket.exists());

    let mut engine = server.create_database("lab").unwrap();
    assert_eq!(engine.kind(), EngineKind::Postgres);
    exercise(&mut engine, work.path(), "        ");

    let plan = engine.explain_analyze("SELECT * FROM t WHERE i = 1").unwrap().unwrap();
    assert!(plan.contains("actual time"), "{plan}");
    assert_eq!(
        rows(
            &mut engine,
            "SELECT true, 2::int2, 1.5::float4, 'x'::text, '2024-01-02 03:04:05.5'::timestamp, '1 day 02:00'::interval",
            &[]
        ),
        vec![vec![int(1), int(2), Cell::Float(1.5), text("x"), text("2024-01-02 03:04:05.5"), text("1 day 02:00:00")]]
    );

    // A second connection sees what the first committed, and only that.
    let mut other = engine.connect_another().unwrap();
    engine.begin_write().unwrap();
    engine.run("INSERT INTO t (i) VALUES (5)", &[]).unwrap();
    assert_eq!(one(other.as_mut(), "SELECT count(*) FROM t", &[]), int(4));
    engine.run("COMMIT", &[]).unwrap();
    assert_eq!(one(other.as_mut(), "SELECT count(*) FROM t", &[]), int(5));

    // A serialization failure is retryable.
    engine.run("BEGIN ISOLATION LEVEL REPEATABLE READ", &[]).unwrap();
    assert_eq!(one(&mut engine, "SELECT v FROM t WHERE i = 1", &[]), text("hello world"));
    other.run("UPDATE t SET v = 'other' WHERE i = 1", &[]).unwrap();
    let conflict = engine.run("UPDATE t SET v = 'mine' WHERE i = 1", &[]).unwrap_err();
    assert!(conflict.retryable, "{conflict}");
    assert!(conflict.message.contains("40001"), "{conflict}");
    engine.run("ROLLBACK", &[]).unwrap();

    // A database created again is empty, even with a connection left on the old one.
    let mut again = server.create_database("lab").unwrap();
    assert!(again.run("SELECT count(*) FROM t", &[]).is_err());
    drop((engine, other));

    drop(again);
    drop(server);
    assert!(!socket.exists(), "the server is still running");
    assert!(!socket.parent().unwrap().exists(), "the temporary directory is left");
}

#[test]
fn postgres_data_out_of_reach_goes_to_tmp() {
    if !running_as_root() {
        println!("skipped: only root hands the data directory to the postgres user");
        return;
    }
    // Mode 0700: the postgres user cannot enter it.
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let Some(server) = start_postgres(&work.path().join("postgres")) else { return };
    assert!(server.data_dir().starts_with(server.socket_dir()), "{}", server.data_dir().display());
    let mut engine = server.create_database("x").unwrap();
    assert_eq!(one(&mut engine, "SELECT 1", &[]), int(1));
    let socket = server.socket_path();
    drop(engine);
    drop(server);
    assert!(!socket.exists());
}

#[test]
fn postgres_start_stops_a_server_left_on_its_directory() {
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let dir = work.path().join("postgres");
    let Some(crashed) = start_postgres(&dir) else { return };
    if crashed.data_dir() != dir {
        println!("skipped: the data directory is not where it was asked to be");
        return;
    }
    // A run that died without stopping its server.
    let (old_socket, old_tmp) = (crashed.socket_path(), crashed.socket_dir().to_path_buf());
    std::mem::forget(crashed);
    assert!(old_socket.exists());

    let server = start_postgres(&dir).unwrap();
    assert!(!old_socket.exists(), "the old server is still running");
    let mut engine = server.create_database("again").unwrap();
    assert_eq!(one(&mut engine, "SELECT 1", &[]), int(1));
    let _ = std::fs::remove_dir_all(old_tmp);
}
