//! Runs the built `beedb` shell: `-c` with an error, pipe mode streaming, and a
//! terminal session through a pseudo-terminal.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_beedb");
const TIMEOUT: Duration = Duration::from_secs(10);

fn beedb() -> Command {
    let mut cmd = Command::new(BIN);
    // Keep the shell away from the real home directory's history.
    cmd.env("HOME", std::env::temp_dir());
    cmd
}

// ---------------------------------------------------------------------------------
// -c

/// `--read-only` reads a database and refuses to write it; the file is unchanged.
#[test]
fn read_only_opens_read_and_refuse_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ro.db");
    let out = beedb().arg(&db).args(["-c", "CREATE TABLE t (a int); INSERT INTO t VALUES (7)"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let before = std::fs::read(&db).unwrap();
    let out = beedb().arg("--read-only").arg(&db).args(["-m", "csv", "-c", "SELECT a FROM t"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8(out.stdout).unwrap().contains('7'));
    let out = beedb().arg("-r").arg(&db).args(["-c", "INSERT INTO t VALUES (8)"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr).unwrap().contains("read-only"));
    assert_eq!(std::fs::read(&db).unwrap(), before);
    // A file that does not exist is not created.
    let missing = dir.path().join("missing.db");
    let out = beedb().arg("-r").arg(&missing).args(["-c", "SELECT 1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!missing.exists());
}

/// An argument that is not UTF-8 (`beedb $'x\xff.db'`) is a usage error, not a panic.
#[test]
fn a_non_utf8_argument_is_an_error() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec![dir.path().join(std::ffi::OsStr::from_bytes(b"x\xff.db")).into_os_string()],
        vec!["-c".into(), std::ffi::OsStr::from_bytes(b"SELECT '\xff'").to_os_string()],
    ] {
        let out = beedb().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains("is not valid UTF-8"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn command_with_syntax_error_fails_with_a_caret() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let out = beedb()
        .arg(&db)
        .args(["-c", "CREATE TABLEX t (a int); SELECT 1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr,
        "ERROR:  syntax error at or near \"TABLEX\" (expected: an object type after create)\n\
         LINE 1: CREATE TABLEX t (a int);\n\
         \x20              ^\n"
    );
    assert_eq!(out.stdout, b"");
}

#[test]
fn several_commands_stop_at_the_first_failure() {
    let out = beedb()
        .args([
            "-c",
            ".mode csv",
            "-c",
            ".mode",
            "-c",
            "SELEC 1",
            "-c",
            ".help",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout, "current output mode: csv\n",
        "no .help after the failure"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("LINE 1: SELEC 1\n        ^\n"), "{stderr}");
}

#[test]
fn successful_commands_exit_zero() {
    let out = beedb()
        .args(["-c", ".mode json", "-c", ".help"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8(out.stdout).unwrap().contains(".schema"));
}

#[test]
fn bad_arguments_exit_two() {
    let out = beedb().args(["--mode", "xml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn file_argument_runs_a_script() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.sql");
    std::fs::write(
        &script,
        "-- a comment\n.mode json\n.mode\nSELECT\n  1 +;\n.help\n",
    )
    .unwrap();
    let out = beedb().arg("-f").arg(&script).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "current output mode: json\n"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("LINE 2:   1 +;\n             ^\n"),
        "{stderr}"
    );
}

/// Errors from a script name the file and the line where the failing statement
/// ends, as psql's (`psql:FILE:LINE: ERROR:  …`): `-f` files, `.read` files (their
/// own name and line, then the outer file's again) and a pipe (`<stdin>`); DETAIL
/// and LINE lines keep their place after it. `-c` has none (see above).
#[test]
fn script_errors_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("lines.db");
    let inner = dir.path().join("inner.sql");
    std::fs::write(&inner, "SELECT 1;\n\nSELECT nosuch;\n").unwrap();
    let script = dir.path().join("outer.sql");
    std::fs::write(
        &script,
        format!(
            "CREATE TABLE t (a int PRIMARY KEY);\nINSERT INTO t VALUES (1);\n.read {}\nINSERT INTO t\n  VALUES (1);\n",
            inner.display()
        ),
    )
    .unwrap();
    // -f stops at the first error: the one in the .read file.
    let (code, _, stderr) = run_args(&db, &["-f", script.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert_eq!(
        stderr,
        format!(
            "beedb:{}:3: ERROR:  column \"nosuch\" does not exist\nLINE 1: SELECT nosuch;\n               ^\n",
            inner.display()
        )
    );
    // A pipe goes on after errors; the .read file's error, then the outer line 5.
    let input = format!("SELECT 1;\n.read {}\nINSERT INTO t\n  VALUES (1);\n", inner.display());
    let mut child = beedb()
        .arg(&db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!(
            "beedb:{}:3: ERROR:  column \"nosuch\" does not exist\nLINE 1: SELECT nosuch;\n               ^\n\
             beedb:<stdin>:4: ERROR:  duplicate key value violates unique constraint \"t_pkey\"\n\
             DETAIL:  Key (a)=(1) already exists.\n",
            inner.display()
        )
    );
}

#[test]
fn command_runs_statements_in_each_mode() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let run = |args: &[&str]| {
        let out = beedb().arg(&db).args(args).output().unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(
        run(&[
            "-c",
            "CREATE TABLE t (a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'x, y'), (2, NULL)"
        ]),
        "CREATE TABLE\nINSERT 0 2\n"
    );
    assert_eq!(
        run(&["-c", "SELECT a, b FROM t ORDER BY a"]),
        "┌───┬──────┐\n│ a │  b   │\n├───┼──────┤\n│ 1 │ x, y │\n│ 2 │ NULL │\n└───┴──────┘\n(2 rows)\n"
    );
    assert_eq!(
        run(&["--mode", "csv", "-c", "SELECT a, b FROM t ORDER BY a"]),
        "a,b\n1,\"x, y\"\n2,\n"
    );
    assert_eq!(
        run(&["--mode", "json", "-c", "SELECT a, b FROM t ORDER BY a"]),
        "[{\"a\":1,\"b\":\"x, y\"},\n{\"a\":2,\"b\":null}]\n"
    );
    assert_eq!(run(&["-c", ".tables"]), "t\n");
}

/// Runs `beedb` on `db` with `args`; returns (exit status, stdout, stderr).
fn run_args(db: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = beedb().arg(db).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn output_sends_results_to_a_file_until_output_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("o.db");
    let file = dir.path().join("out.txt");
    let file_arg = format!(".output {}", file.display());
    let (code, stdout, stderr) = run_args(
        &db,
        &[
            "-c",
            ".mode csv",
            "-c",
            &file_arg,
            "-c",
            "CREATE TABLE t (a INT); INSERT INTO t VALUES (1), (2); SELECT a FROM t ORDER BY a",
            "-c",
            ".output",
            "-c",
            "SELECT 3 AS b",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "b\n3\n");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "CREATE TABLE\nINSERT 0 2\na\n1\n2\n"
    );
    // Errors still go to standard error; the file is truncated when opened again.
    let (code, stdout, stderr) = run_args(&db, &["-c", &file_arg, "-c", "SELECT nope FROM t"]);
    assert_eq!(code, Some(1));
    assert_eq!(stdout, "");
    assert!(stderr.contains("column \"nope\" does not exist"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "");
    // A file that cannot be opened is an error; output stays on the terminal.
    let (code, _, stderr) = run_args(&db, &["-c", ".output /nonexistent/dir/x"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("could not open file \"/nonexistent/dir/x\" for writing"), "{stderr}");
}

#[test]
fn once_sends_only_the_next_statement_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("o.db");
    let file = dir.path().join("once.csv");
    let once = format!(".once '{}'", file.display());
    let (code, stdout, stderr) = run_args(
        &db,
        &["-c", ".mode csv", "-c", &once, "-c", "SELECT 1 AS a; SELECT 2 AS b", "-c", "SELECT 3 AS c"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "a\n1\n");
    assert_eq!(stdout, "b\n2\nc\n3\n");
    // `.once` with `.timer on`: the run time goes to the terminal, not the file.
    let (code, stdout, _) = run_args(
        &db,
        &["-c", ".timer on", "-c", ".mode csv", "-c", &once, "-c", "SELECT 4 AS d"],
    );
    assert_eq!(code, Some(0));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "d\n4\n");
    assert!(stdout.starts_with("Run Time: "), "{stdout}");
    let (code, _, stderr) = run_args(&db, &["-c", ".once"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("usage: .once FILE"), "{stderr}");
}

#[test]
fn headers_off_drops_column_names() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let (code, stdout, _) = run_args(
        &db,
        &["-c", ".headers off", "-c", ".mode csv", "-c", "SELECT 1 AS a, 'x' AS b", "-c", ".headers on", "-c", "SELECT 2 AS c"],
    );
    assert_eq!(code, Some(0));
    assert_eq!(stdout, "1,x\nc\n2\n");
    let (_, stdout, _) = run_args(&db, &["-c", ".headers off", "-c", "SELECT 1 AS a"]);
    assert_eq!(stdout, "┌───┐\n│ 1 │\n└───┘\n(1 row)\n");
    let (code, _, stderr) = run_args(&db, &["-c", ".headers maybe"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("usage: .headers on|off"), "{stderr}");
}

#[test]
fn line_and_markdown_modes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let sql = "SELECT 1 AS id, 'a|b' AS name UNION ALL SELECT 22, NULL ORDER BY id";
    let (code, stdout, stderr) = run_args(&db, &["-m", "line", "-c", sql]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "  id = 1\nname = a|b\n\n  id = 22\nname = NULL\n");
    let (code, stdout, _) = run_args(&db, &["-c", ".mode markdown", "-c", sql]);
    assert_eq!(code, Some(0));
    assert_eq!(
        stdout,
        "| id | name |\n|----|------|\n|  1 | a\\|b |\n| 22 | NULL |\n"
    );
}

#[test]
fn psql_expanded_display_and_timing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let (code, stdout, stderr) = run_args(
        &db,
        &["-c", "\\x", "-c", "SELECT 1 AS id, 'one' AS name UNION ALL SELECT 2, 'two' ORDER BY id", "-c", "\\x off", "-c", "\\timing", "-c", "SELECT 1 AS a"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let expected_start = "\
Expanded display is on.
-[ RECORD 1 ]
id   | 1
name | one
-[ RECORD 2 ]
id   | 2
name | two
Expanded display is off.
Timing is on.
┌───┐
│ a │
├───┤
│ 1 │
└───┘
(1 row)
Run Time: ";
    assert!(stdout.starts_with(expected_start), "{stdout}");
}

/// A table with NULLs, empty strings, quotes, commas and line breaks goes out through
/// `.mode csv` + `.once` and back in through `.import`, unchanged.
#[test]
fn csv_export_and_import_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let csv = dir.path().join("t.csv");
    let once = format!(".once {}", csv.display());
    let (code, _, stderr) = run_args(
        &db,
        &[
            "-c",
            "CREATE TABLE t (id INT, s TEXT, n NUMERIC(6,2));
             INSERT INTO t VALUES (1, 'plain', 1.5), (2, NULL, NULL), (3, '', 0),
               (4, 'a, \"b\"', -2.25), (5, E'two\nlines', 3), (6, 'it''s', NULL)",
            "-c",
            ".mode csv",
            "-c",
            &once,
            "-c",
            "SELECT * FROM t ORDER BY id",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "id,s,n\n1,plain,1.50\n2,,\n3,\"\",0.00\n4,\"a, \"\"b\"\"\",-2.25\n5,\"two\nlines\",3.00\n6,it's,\n"
    );
    let import_u = format!(".import --skip 1 {} u", csv.display());
    let import_v = format!(".import '{}' v", csv.display());
    let (code, stdout, stderr) = run_args(
        &db,
        &[
            "-c",
            "CREATE TABLE u (id INT, s TEXT, n NUMERIC(6,2))",
            "-c",
            &import_u,
            "-c",
            &import_v,
            "-c",
            ".mode csv",
            "-c",
            "SELECT (SELECT count(*) FROM u) AS rows,
                    (SELECT count(*) FROM (SELECT * FROM t EXCEPT SELECT * FROM u) d) AS missing,
                    (SELECT count(*) FROM (SELECT * FROM u EXCEPT SELECT * FROM t) d) AS extra",
            "-c",
            "SELECT id, s, s IS NULL AS null_s, n FROM v ORDER BY id",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stdout,
        "CREATE TABLE\nCOPY 6\nCOPY 6\nrows,missing,extra\n6,0,0\nid,s,null_s,n\n\
         1,plain,f,1.50\n2,,t,\n3,\"\",f,0.00\n4,\"a, \"\"b\"\"\",f,-2.25\n5,\"two\nlines\",f,3.00\n6,it's,f,\n"
    );
    // v was created from the header: every column TEXT.
    let (_, stdout, _) = run_args(&db, &["-c", ".schema v"]);
    assert_eq!(stdout, "CREATE TABLE v (id text, s text, n text);\n");
}

#[test]
fn import_errors_name_the_line_and_leave_no_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("e.db");
    let csv = dir.path().join("bad.csv");
    std::fs::write(&csv, "a,b\n1,2\n3,4,5\n").unwrap();
    let import = format!(".import {} w", csv.display());
    let (code, _, stderr) = run_args(&db, &["-c", &import]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("extra data after last expected column"), "{stderr}");
    assert!(stderr.contains("line 3"), "{stderr}");
    let (code, _, stderr) = run_args(&db, &["-c", "SELECT * FROM w"]);
    assert_eq!(code, Some(1), "the failed import left its table behind");
    assert!(stderr.contains("relation \"w\" does not exist"), "{stderr}");
    // An existing table: the first row is data unless skipped.
    let (code, _, stderr) = run_args(&db, &["-c", "CREATE TABLE n (a INT, b INT)", "-c", &format!(".import {} n", csv.display())]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("invalid input syntax for type integer"), "{stderr}");
    // --skip 2 skips the header and the first row (through a temporary copy).
    std::fs::write(&csv, "a,b\n1,2\n3,4\n").unwrap();
    let (code, stdout, stderr) = run_args(
        &db,
        &["-c", &format!(".import --skip 2 {} n", csv.display()), "-m", "csv", "-c", "SELECT * FROM n"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "COPY 1\na,b\n3,4\n");
    let (code, _, stderr) = run_args(&db, &["-c", ".import onlyone"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("usage: .import"), "{stderr}");
}

/// `\d t` shows an identity column's default as psql does: its generation, after
/// CREATE TABLE and after ALTER COLUMN … SET GENERATED / ADD / DROP IDENTITY.
#[test]
fn describe_shows_identity_columns_as_psql() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("id.db");
    let (code, stdout, stderr) = run_args(
        &db,
        &[
            "-c",
            "CREATE TABLE ti (id int GENERATED ALWAYS AS IDENTITY, k bigint GENERATED BY DEFAULT AS IDENTITY, s serial, n int NOT NULL)",
            "-c",
            "\\d ti",
            "-c",
            "ALTER TABLE ti ALTER COLUMN id SET GENERATED BY DEFAULT; ALTER TABLE ti ALTER COLUMN k DROP IDENTITY; ALTER TABLE ti ALTER COLUMN n ADD GENERATED ALWAYS AS IDENTITY (START WITH 5 INCREMENT BY 5)",
            "-c",
            "\\d ti",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let expected = concat!(
        "CREATE TABLE\n",
        "                             Table \"public.ti\"\n",
        " Column |  Type   | Collation | Nullable |             Default              \n",
        "--------+---------+-----------+----------+----------------------------------\n",
        " id     | integer |           | not null | generated always as identity\n",
        " k      | bigint  |           | not null | generated by default as identity\n",
        " s      | integer |           | not null | nextval('ti_s_seq')\n",
        " n      | integer |           | not null | \n",
        "ALTER TABLE\nALTER TABLE\nALTER TABLE\n",
        "                             Table \"public.ti\"\n",
        " Column |  Type   | Collation | Nullable |             Default              \n",
        "--------+---------+-----------+----------+----------------------------------\n",
        " id     | integer |           | not null | generated by default as identity\n",
        " k      | bigint  |           | not null | \n",
        " s      | integer |           | not null | nextval('ti_s_seq')\n",
        " n      | integer |           | not null | generated always as identity\n",
    );
    assert_eq!(stdout, expected);
    let (code, stdout, _) = run_args(&db, &["-m", "csv", "-c", "INSERT INTO ti (k) VALUES (1) RETURNING id, n"]);
    assert_eq!(code, Some(0));
    assert_eq!(stdout, "id,n\n1,5\n");
}

#[test]
fn psql_describe_commands_print_psqls_layout() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("d.db");
    let (code, _, stderr) = run_args(&db, &["-c", "\\dt"]);
    assert_eq!(code, Some(0), "an empty list is no failure");
    assert_eq!(stderr, "Did not find any relations.\n");
    let (code, stdout, stderr) = run_args(
        &db,
        &[
            "-c",
            "CREATE TABLE t (a INT PRIMARY KEY CHECK (a > 0), b VARCHAR(10) NOT NULL, c NUMERIC(8,2) DEFAULT 1.5,
                              CONSTRAINT \"B short\" CHECK (length(b) < 5));
             CREATE UNIQUE INDEX t_b ON t (b); CREATE INDEX t_c_a ON t (c, a);
             CREATE VIEW v AS SELECT a, b AS bee FROM t",
            "-c",
            "\\dt",
            "-c",
            "\\d",
            "-c",
            "\\d t",
            "-c",
            "\\d V;",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let expected = concat!(
        "CREATE TABLE\nCREATE INDEX\nCREATE INDEX\nCREATE VIEW\n",
        "   List of relations\n",
        " Schema | Name | Type  \n",
        "--------+------+-------\n",
        " public | t    | table\n",
        "(1 row)\n",
        "   List of relations\n",
        " Schema | Name | Type  \n",
        "--------+------+-------\n",
        " public | t    | table\n",
        " public | v    | view\n",
        "(2 rows)\n",
        "                        Table \"public.t\"\n",
        " Column |         Type          | Collation | Nullable | Default \n",
        "--------+-----------------------+-----------+----------+---------\n",
        " a      | integer               |           | not null | \n",
        " b      | character varying(10) |           | not null | \n",
        " c      | numeric(8,2)          |           |          | 1.5\n",
        "Indexes:\n",
        "    \"t_pkey\" PRIMARY KEY, btree (a)\n",
        "    \"t_b\" UNIQUE, btree (b)\n",
        "    \"t_c_a\" btree (c, a)\n",
        "Check constraints:\n",
        "    \"B short\" CHECK (length(b) < 5)\n",
        "    \"t_a_check\" CHECK (a > 0)\n",
        "                         View \"public.v\"\n",
        " Column |         Type          | Collation | Nullable | Default \n",
        "--------+-----------------------+-----------+----------+---------\n",
        " a      | integer               |           |          | \n",
        " bee    | character varying(10) |           |          | \n",
    );
    assert_eq!(stdout, expected, "\n{stdout}");
    let (code, _, stderr) = run_args(&db, &["-c", "\\d nope"]);
    assert_eq!(code, Some(1));
    assert_eq!(stderr, "Did not find any relation named \"nope\".\n");
    let (code, _, stderr) = run_args(&db, &["-c", "\\foo"]);
    assert_eq!(code, Some(1));
    assert_eq!(stderr, "invalid command \\foo\nTry \\? for help.\n");
    let (code, stdout, _) = run_args(&db, &["-c", "\\?"]);
    assert_eq!(code, Some(0));
    assert!(stdout.contains("\\d NAME"), "{stdout}");
}

/// `.schema t` prints t's CREATE TABLE and then its CREATE INDEX statements; the
/// whole schema puts each table's indexes after it and views last.
#[test]
fn schema_includes_a_tables_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let (code, stdout, stderr) = run_args(
        &db,
        &[
            "-c",
            "CREATE TABLE t (a INT PRIMARY KEY, b TEXT UNIQUE, c INT);
             CREATE INDEX t_c ON t (c, a); CREATE TABLE u (x INT); CREATE INDEX a_first ON u (x);
             CREATE VIEW av AS SELECT a FROM t",
            "-c",
            ".schema t",
            "-c",
            ".schema",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let expected = concat!(
        "CREATE TABLE\nCREATE INDEX\nCREATE TABLE\nCREATE INDEX\nCREATE VIEW\n",
        "CREATE TABLE t (a integer NOT NULL, b text, c integer, PRIMARY KEY (a));\n",
        "CREATE UNIQUE INDEX t_b_key ON t (b);\n",
        "CREATE INDEX t_c ON t (c, a);\n",
        "CREATE TABLE t (a integer NOT NULL, b text, c integer, PRIMARY KEY (a));\n",
        "CREATE UNIQUE INDEX t_b_key ON t (b);\n",
        "CREATE INDEX t_c ON t (c, a);\n",
        "CREATE TABLE u (x integer);\n",
        "CREATE INDEX a_first ON u (x);\n",
        "CREATE VIEW av AS SELECT a FROM t;\n",
    );
    assert_eq!(stdout, expected, "\n{stdout}");
    // The printed schema replays into an empty database.
    let script = dir.path().join("schema.sql");
    let once = format!(".once {}", script.display());
    let (code, _, _) = run_args(&db, &["-c", &once, "-c", ".schema"]);
    assert_eq!(code, Some(0));
    let (code, _, stderr) = run_args(&dir.path().join("copy.db"), &["-f", script.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
}

/// `.schema` writes SERIAL and identity columns as such and a sequence no column owns
/// as `CREATE SEQUENCE` before the tables, so a dump replays into an empty database
/// and the replayed tables number their rows as the originals did (before, the
/// columns came out as `DEFAULT nextval('t_id_seq')` and the first INSERT after a
/// replay failed: no such sequence).
#[test]
fn schema_replays_serial_identity_columns_and_sequences() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let (code, _, stderr) = run_args(
        &db,
        &[
            "-c",
            "CREATE SEQUENCE ticket AS integer INCREMENT BY 5 START WITH 10;
             CREATE TABLE t (id SERIAL PRIMARY KEY, b BIGSERIAL, n INT DEFAULT nextval('ticket'),
                             g INT GENERATED ALWAYS AS IDENTITY (INCREMENT BY 2 START WITH 7),
                             h BIGINT GENERATED BY DEFAULT AS IDENTITY, c TEXT)",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stdout, _) = run_args(&db, &["-c", ".schema"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        stdout,
        concat!(
            "CREATE SEQUENCE ticket AS integer INCREMENT BY 5 START WITH 10;\n",
            "CREATE TABLE t (id serial, b bigserial, n integer DEFAULT nextval('ticket'), ",
            "g integer GENERATED ALWAYS AS IDENTITY (INCREMENT BY 2 START WITH 7), ",
            "h bigint GENERATED BY DEFAULT AS IDENTITY, c text, PRIMARY KEY (id));\n",
        ),
        "\n{stdout}"
    );
    let script = dir.path().join("schema.sql");
    let once = format!(".once {}", script.display());
    let (code, _, _) = run_args(&db, &["-c", &once, "-c", ".schema"]);
    assert_eq!(code, Some(0));
    let copy = dir.path().join("copy.db");
    let (code, _, stderr) = run_args(&copy, &["-f", script.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stdout, stderr) = run_args(&copy, &["-c", "INSERT INTO t (c) VALUES ('x'), ('y')", "-c", ".mode csv", "-c", "SELECT id, b, n, g, h, c FROM t ORDER BY id"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.ends_with("1,1,10,7,1,x\n2,2,15,9,2,y\n"), "{stdout}");
    // GENERATED ALWAYS still refuses an explicit value after the replay.
    let (code, _, _) = run_args(&copy, &["-c", "INSERT INTO t (g) VALUES (1)"]);
    assert_eq!(code, Some(1));
}

/// An identity's `SEQUENCE NAME` names its sequence, and `.schema` writes it (and the
/// name a renamed table's identity sequence keeps), so the replayed columns number
/// from sequences of the same names.
#[test]
fn schema_replays_identity_sequence_names() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("n.db");
    let (code, _, stderr) = run_args(
        &db,
        &[
            "-c",
            "CREATE TABLE orders (id INT GENERATED ALWAYS AS IDENTITY (START WITH 100 SEQUENCE NAME order_numbers), c TEXT);
             CREATE TABLE lines (n BIGINT GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME \"Line No\"), k INT GENERATED BY DEFAULT AS IDENTITY);
             CREATE TABLE old (id INT GENERATED ALWAYS AS IDENTITY);
             ALTER TABLE old RENAME TO renamed;
             INSERT INTO orders (c) VALUES ('a')",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stdout, _) = run_args(&db, &["-c", "SELECT nextval('order_numbers'), nextval('\"Line No\"'), nextval('lines_k_seq')"]);
    assert_eq!(code, Some(0));
    assert!(stdout.contains("101") && stdout.contains(" 1 "), "{stdout}");
    let (code, stdout, _) = run_args(&db, &["-c", ".schema"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        stdout,
        concat!(
            "CREATE TABLE lines (n bigint GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME \"Line No\"), ",
            "k integer GENERATED BY DEFAULT AS IDENTITY);\n",
            "CREATE TABLE orders (id integer GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME order_numbers START WITH 100), c text);\n",
            "CREATE TABLE renamed (id integer GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME old_id_seq));\n",
        ),
        "\n{stdout}"
    );
    let script = dir.path().join("schema.sql");
    let once = format!(".once {}", script.display());
    let (code, _, _) = run_args(&db, &["-c", &once, "-c", ".schema"]);
    assert_eq!(code, Some(0));
    let copy = dir.path().join("copy.db");
    let (code, _, stderr) = run_args(&copy, &["-f", script.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stdout, stderr) = run_args(
        &copy,
        &["-c", "INSERT INTO orders (c) VALUES ('x')", "-c", ".mode csv", "-c", "SELECT id, nextval('order_numbers'), nextval('\"Line No\"'), nextval('old_id_seq') FROM orders"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.ends_with("100,101,1,1\n"), "{stdout}");
}

#[test]
fn constraint_errors_print_postgresqls_detail_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let (code, _, stderr) = run_args(
        &db,
        &["-c", "CREATE TABLE t (a INT PRIMARY KEY, b TEXT NOT NULL); INSERT INTO t VALUES (1, 'x')", "-c", "INSERT INTO t VALUES (1, 'y')"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(
        stderr,
        "ERROR:  duplicate key value violates unique constraint \"t_pkey\"\nDETAIL:  Key (a)=(1) already exists.\n"
    );
    let (code, _, stderr) = run_args(&db, &["-c", "UPDATE t SET b = NULL"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        stderr,
        "ERROR:  null value in column \"b\" of relation \"t\" violates not-null constraint\n\
         DETAIL:  Failing row contains (1, null).\n"
    );
}

// ---------------------------------------------------------------------------------
// pipe mode

/// Lines of a child's output, arriving on a channel so a test can wait with a
/// timeout instead of blocking forever.
fn lines_of<R: Read + Send + 'static>(r: R) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn next_line(rx: &Receiver<String>, what: &str) -> String {
    rx.recv_timeout(TIMEOUT)
        .unwrap_or_else(|e| panic!("no output for {what} within {TIMEOUT:?}: {e}"))
}

struct Piped {
    child: Child,
    stdin: ChildStdin,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
}

impl Piped {
    fn start(args: &[&std::ffi::OsStr]) -> Piped {
        let mut child = beedb()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = lines_of(child.stdout.take().unwrap());
        let stderr = lines_of(child.stderr.take().unwrap());
        Piped {
            child,
            stdin,
            stdout,
            stderr,
        }
    }

    fn send(&mut self, text: &str) {
        self.stdin.write_all(text.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Closes stdin and waits for the exit status.
    fn finish(self) -> Option<i32> {
        let Piped {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        for _ in 0..(TIMEOUT.as_millis() / 20) {
            if let Some(status) = child.try_wait().unwrap() {
                return status.code();
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the shell did not exit at the end of its input");
    }
}

#[test]
fn pipe_mode_answers_each_statement_before_the_next_arrives() {
    let mut sh = Piped::start(&[]);
    // Each answer is read before the next statement is written: the shell runs
    // statements as they arrive instead of reading all of its input first.
    sh.send("SELEC 1;\n");
    assert_eq!(
        next_line(&sh.stderr, "1st statement"),
        "beedb:<stdin>:1: ERROR:  syntax error at or near \"SELEC\" (expected: an sql statement)"
    );
    assert_eq!(next_line(&sh.stderr, "1st statement"), "LINE 1: SELEC 1;");
    assert_eq!(next_line(&sh.stderr, "1st statement"), "        ^");
    sh.send(".mode csv\n.mode\n");
    assert_eq!(next_line(&sh.stdout, ".mode"), "current output mode: csv");
    // A statement over several writes runs when its `;` arrives.
    sh.send("SELECT 1 +\n");
    sh.send("  ;\n");
    assert_eq!(
        next_line(&sh.stderr, "2nd statement"),
        "beedb:<stdin>:5: ERROR:  syntax error at or near \";\" (expected: an expression)"
    );
    assert_eq!(next_line(&sh.stderr, "2nd statement"), "LINE 2:   ;");
    assert_eq!(next_line(&sh.stderr, "2nd statement"), "          ^");
    sh.send(".mode\n");
    assert_eq!(next_line(&sh.stdout, ".mode"), "current output mode: csv");
    // Errors do not stop pipe mode, but the exit status reports them.
    assert_eq!(sh.finish(), Some(1));
}

#[test]
fn pipe_mode_exits_zero_without_errors() {
    let mut sh = Piped::start(&[]);
    sh.send(".mode json\n.mode\n");
    assert_eq!(next_line(&sh.stdout, ".mode"), "current output mode: json");
    assert_eq!(sh.finish(), Some(0));
}

#[test]
fn pipe_mode_streams_results() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let mut sh = Piped::start(&[db.as_os_str()]);
    sh.send("CREATE TABLE t (a INTEGER);\n");
    assert_eq!(next_line(&sh.stdout, "CREATE"), "CREATE TABLE");
    sh.send("INSERT INTO t VALUES (1), (2);\n");
    assert_eq!(next_line(&sh.stdout, "INSERT"), "INSERT 0 2");
    sh.send(".mode csv\nSELECT a FROM t ORDER BY a;\n");
    assert_eq!(next_line(&sh.stdout, "SELECT"), "a");
    assert_eq!(next_line(&sh.stdout, "SELECT"), "1");
    assert_eq!(next_line(&sh.stdout, "SELECT"), "2");
    sh.send("SELECT * FROM nope;\n");
    assert_eq!(
        next_line(&sh.stderr, "error"),
        "beedb:<stdin>:5: ERROR:  relation \"nope\" does not exist"
    );
    sh.send("SELECT count(*) FROM t;\n");
    assert_eq!(next_line(&sh.stdout, "count"), "count");
    assert_eq!(next_line(&sh.stdout, "count"), "2");
    assert_eq!(sh.finish(), Some(1));
}

// ---------------------------------------------------------------------------------
// terminal

#[cfg(unix)]
mod terminal {
    use super::*;
    use rexpect::session::{Options, PtySession, spawn_with_options};

    /// Starts the shell on a pseudo-terminal, in `dir` (also its HOME).
    fn start(dir: &std::path::Path, args: &[&str]) -> PtySession {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .current_dir(dir)
            .env("HOME", dir)
            .env("TERM", "xterm");
        let options = Options::new()
            .timeout_ms(Some(TIMEOUT.as_millis() as u64))
            .strip_ansi_escape_codes(true);
        spawn_with_options(cmd, options).expect("spawn beedb on a pty")
    }

    #[test]
    fn session_prompts_help_errors_and_quit() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = start(dir.path(), &["demo.db"]);
        p.exp_string(&format!("BeeDB {}", env!("CARGO_PKG_VERSION")))
            .unwrap();
        p.exp_string("Connected to \"demo.db\".").unwrap();
        p.exp_string("Enter .help for usage hints.").unwrap();
        p.exp_string("beedb> ").unwrap();

        p.send_line(".help").unwrap();
        p.exp_string(".schema [TABLE]").unwrap();
        p.exp_string("beedb> ").unwrap();

        // A statement over two lines: the continuation prompt, then the error with
        // its caret on the second line.
        p.send_line("SELECT 1,").unwrap();
        p.exp_string("   ...> ").unwrap();
        p.send_line("  2 +;").unwrap();
        p.exp_string("ERROR:  syntax error at or near \";\"")
            .unwrap();
        p.exp_string("LINE 2:   2 +;").unwrap();
        p.exp_regex(r"\n {13}\^").unwrap();
        p.exp_string("beedb> ").unwrap();

        // Ctrl-C clears a half-typed statement.
        p.send_line("SELECT 'unfinished").unwrap();
        p.exp_string("   ...> ").unwrap();
        p.send_control('c').unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line(".nope").unwrap();
        p.exp_string("unknown command \".nope\"").unwrap();
        p.exp_string("beedb> ").unwrap();

        p.send_line(".quit").unwrap();
        p.exp_eof().unwrap();
        assert!(
            dir.path().join("demo.db").exists(),
            "the database file was created"
        );
        assert!(
            dir.path().join(".beedb_history").exists(),
            "history was saved"
        );

        // Reopen the file; Ctrl-D leaves.
        let mut p = start(dir.path(), &["demo.db"]);
        p.exp_string("beedb> ").unwrap();
        p.send_control('d').unwrap();
        p.exp_eof().unwrap();
    }

    /// psql's backslash commands at the prompt: they run at once and the prompt
    /// after them is never the continuation prompt.
    #[test]
    fn backslash_commands_never_leave_a_continuation_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = start(dir.path(), &[]);
        p.exp_string("beedb> ").unwrap();
        p.send_line("CREATE TABLE t (a INT PRIMARY KEY, b TEXT);").unwrap();
        p.exp_string("CREATE TABLE").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line("\\dt").unwrap();
        p.exp_string("List of relations").unwrap();
        p.exp_string(" public | t    | table").unwrap();
        p.exp_string("(1 row)").unwrap();
        p.exp_regex("(beedb> |\\.\\.\\.> )").map(|(_, m)| assert_eq!(m, "beedb> ")).unwrap();
        p.send_line("\\d t").unwrap();
        p.exp_string("Table \"public.t\"").unwrap();
        p.exp_string(" a      | integer |           | not null | ").unwrap();
        p.exp_string("\"t_pkey\" PRIMARY KEY, btree (a)").unwrap();
        p.exp_regex("(beedb> |\\.\\.\\.> )").map(|(_, m)| assert_eq!(m, "beedb> ")).unwrap();
        p.send_line("\\foo").unwrap();
        p.exp_string("invalid command \\foo").unwrap();
        p.exp_string("Try \\? for help.").unwrap();
        p.exp_regex("(beedb> |\\.\\.\\.> )").map(|(_, m)| assert_eq!(m, "beedb> ")).unwrap();
        // Inside a statement a backslash command runs at once; the statement is
        // kept, as in psql.
        p.send_line("SELECT 40 +").unwrap();
        p.exp_string("   ...> ").unwrap();
        p.send_line("\\x").unwrap();
        p.exp_string("Expanded display is on.").unwrap();
        p.exp_string("   ...> ").unwrap();
        p.send_line("2 AS answer;").unwrap();
        p.exp_string("-[ RECORD 1 ]").unwrap();
        p.exp_string("answer | 42").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line("\\q").unwrap();
        p.exp_eof().unwrap();
    }

    /// The prompt shows the transaction state as psql's does: `*` inside a block,
    /// `!` inside a failed one, on the continuation prompt too.
    #[test]
    fn prompt_shows_an_open_or_failed_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = start(dir.path(), &[]);
        p.exp_string("beedb> ").unwrap();
        p.send_line("BEGIN;").unwrap();
        p.exp_string("beedb*> ").unwrap();
        p.send_line("SELECT 1").unwrap();
        p.exp_string("  ...*> ").unwrap();
        p.send_line("/ 0;").unwrap();
        p.exp_string("ERROR:  division by zero").unwrap();
        p.exp_string("beedb!> ").unwrap();
        p.send_line("SELECT 1;").unwrap();
        p.exp_string("current transaction is aborted").unwrap();
        p.exp_string("beedb!> ").unwrap();
        p.send_line("ROLLBACK;").unwrap();
        p.exp_string("ROLLBACK").unwrap();
        p.exp_regex("beedb[*!]?> ").map(|(_, m)| assert_eq!(m, "beedb> ")).unwrap();
        // COMMIT in a failed block rolls back and ends it.
        p.send_line("BEGIN;").unwrap();
        p.exp_string("beedb*> ").unwrap();
        p.send_line("SELECT * FROM nope;").unwrap();
        p.exp_string("beedb!> ").unwrap();
        p.send_line("COMMIT;").unwrap();
        p.exp_string("ROLLBACK").unwrap();
        p.exp_regex("beedb[*!]?> ").map(|(_, m)| assert_eq!(m, "beedb> ")).unwrap();
        p.send_line(".quit").unwrap();
        p.exp_eof().unwrap();
    }

    /// Export with `.mode csv` + `.once` and import with `.import` in a terminal
    /// session: NULLs, empty strings, quotes, commas and line breaks survive.
    #[test]
    fn session_exports_and_imports_a_table() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = start(dir.path(), &["trip.db"]);
        p.exp_string("beedb> ").unwrap();
        p.send_line("CREATE TABLE t (id INT, s TEXT);").unwrap();
        p.exp_string("CREATE TABLE").unwrap();
        p.send_line("INSERT INTO t VALUES (1, 'a, \"b\"'), (2, NULL), (3, ''), (4, E'two\\nlines');")
            .unwrap();
        p.exp_string("INSERT 0 4").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line(".mode csv").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line(".once t.csv").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line("SELECT * FROM t ORDER BY id;").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line("CREATE TABLE u (id INT, s TEXT);").unwrap();
        p.exp_string("CREATE TABLE").unwrap();
        p.send_line(".import --skip 1 t.csv u").unwrap();
        p.exp_string("COPY 4").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line("SELECT count(*) AS differ FROM (SELECT * FROM t EXCEPT SELECT * FROM u) d;")
            .unwrap();
        p.exp_string("differ").unwrap();
        p.exp_regex("\r?\n0\r?\n").unwrap();
        p.send_line("SELECT id AS null_id FROM u WHERE s IS NULL;").unwrap();
        p.exp_string("null_id").unwrap();
        p.exp_regex("\r?\n2\r?\n").unwrap();
        p.send_line(".quit").unwrap();
        p.exp_eof().unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("t.csv")).unwrap(),
            "id,s\n1,\"a, \"\"b\"\"\"\n2,\n3,\"\"\n4,\"two\nlines\"\n"
        );
    }

    #[test]
    fn in_memory_banner() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = start(dir.path(), &[]);
        p.exp_string("transient in-memory database").unwrap();
        p.exp_string("Enter .help for usage hints.").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line(".exit").unwrap();
        p.exp_eof().unwrap();
    }

    #[test]
    fn session_creates_a_file_database_and_reopens_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = start(dir.path(), &["shop.db"]);
        p.exp_string("beedb> ").unwrap();

        p.send_line("CREATE TABLE items (id INTEGER PRIMARY KEY,")
            .unwrap();
        p.exp_string("   ...> ").unwrap();
        p.send_line("  name TEXT, price NUMERIC(8,2));").unwrap();
        p.exp_string("CREATE TABLE").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line("INSERT INTO items VALUES (1, 'apple', 0.5), (2, 'pear', 12);")
            .unwrap();
        p.exp_string("INSERT 0 2").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line("INSERT INTO items VALUES (3, 'fig', NULL);")
            .unwrap();
        p.exp_string("INSERT 0 1").unwrap();
        p.exp_string("beedb> ").unwrap();

        p.send_line("SELECT * FROM items ORDER BY id;").unwrap();
        let table = "\
┌────┬───────┬───────┐
│ id │ name  │ price │
├────┼───────┼───────┤
│  1 │ apple │  0.50 │
│  2 │ pear  │ 12.00 │
│  3 │ fig   │  NULL │
└────┴───────┴───────┘
(3 rows)";
        // rexpect reads the pty byte by byte as Latin-1: compare the UTF-8 box
        // drawing in that form.
        let latin1 = |s: &str| s.bytes().map(char::from).collect::<String>();
        for line in table.lines() {
            p.exp_string(&latin1(line)).unwrap();
        }
        p.exp_string("beedb> ").unwrap();

        p.send_line("SELECT nme FROM items;").unwrap();
        p.exp_string("ERROR:  column \"nme\" does not exist")
            .unwrap();
        p.exp_string("LINE 1: SELECT nme FROM items;").unwrap();
        p.exp_regex(r"\n {15}\^").unwrap();
        p.exp_string("beedb> ").unwrap();

        p.send_line(".tables").unwrap();
        p.exp_string("items").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line(".schema items").unwrap();
        p.exp_string("CREATE TABLE items").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line(".quit").unwrap();
        p.exp_eof().unwrap();

        let mut p = start(dir.path(), &["shop.db"]);
        p.exp_string("beedb> ").unwrap();
        p.send_line(".mode csv").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line("SELECT name, price FROM items ORDER BY id;")
            .unwrap();
        p.exp_string("name,price").unwrap();
        p.exp_string("apple,0.50").unwrap();
        p.exp_string("pear,12.00").unwrap();
        p.exp_string("fig,").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line(".quit").unwrap();
        p.exp_eof().unwrap();
    }

    /// A query that runs for minutes: a billion-row cross join of ten rows.
    const LONG_QUERY: &str =
        "SELECT count(*) FROM d a, d b, d c, d e, d f, d g, d h, d i, d j;";

    /// Sends Ctrl-C `after` a statement started and returns how long the shell took
    /// to print the cancel error.
    fn cancel_after(p: &mut PtySession, after: Duration) -> Duration {
        std::thread::sleep(after);
        let sent = std::time::Instant::now();
        p.send_control('c').unwrap();
        p.exp_string("ERROR:  canceling statement due to user request")
            .unwrap();
        sent.elapsed()
    }

    #[test]
    fn ctrl_c_cancels_the_running_statement_and_the_shell_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = start(dir.path(), &["cancel.db"]);
        p.exp_string("beedb> ").unwrap();
        p.send_line("CREATE TABLE d (x INT);").unwrap();
        p.exp_string("CREATE TABLE").unwrap();
        // Input sent before the prompt is back can be discarded when the line editor
        // puts the terminal into raw mode (a flush), so each line waits for it.
        p.exp_string("beedb> ").unwrap();
        p.send_line("INSERT INTO d VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9);")
            .unwrap();
        p.exp_string("INSERT 0 10").unwrap();
        // The timeout must not be what stops the query.
        p.send_line("SET statement_timeout = '10min';").unwrap();
        p.exp_string("SET").unwrap();
        p.exp_string("beedb> ").unwrap();

        p.send_line(LONG_QUERY).unwrap();
        let took = cancel_after(&mut p, Duration::from_millis(700));
        // Cancels are checked every few thousand rows, so an idle machine answers in
        // milliseconds (under a second is the target). The bound is loose because CI
        // machines are shared and busy: what it catches is a cancel that waits for the
        // statement (minutes here) or never comes.
        assert!(took < Duration::from_secs(5), "cancel took {took:?}");
        p.exp_string("beedb> ").unwrap();

        // The next statement runs, and so does a Ctrl-C at the prompt followed by
        // a statement: the prompt's Ctrl-C does not cancel it.
        p.send_line("SELECT 40 + 2 AS answer;").unwrap();
        p.exp_string("42").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_control('c').unwrap();
        p.exp_string("press Ctrl-C again to exit").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line("SELECT count(*) AS n FROM d;").unwrap();
        p.exp_string("10").unwrap();
        p.exp_string("beedb> ").unwrap();

        // Inside a transaction block the cancel aborts the block, as in PostgreSQL.
        p.send_line("BEGIN;").unwrap();
        p.exp_string("BEGIN").unwrap();
        p.exp_string("beedb*> ").unwrap();
        p.send_line("INSERT INTO d VALUES (10);").unwrap();
        p.exp_string("INSERT 0 1").unwrap();
        p.exp_string("beedb*> ").unwrap();
        p.send_line(LONG_QUERY).unwrap();
        cancel_after(&mut p, Duration::from_millis(300));
        p.exp_string("beedb!> ").unwrap();
        p.send_line("ROLLBACK;").unwrap();
        p.exp_string("ROLLBACK").unwrap();
        p.exp_string("beedb> ").unwrap();

        // After `.open` Ctrl-C cancels the new connection's statement.
        p.send_line(".open other.db").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line("CREATE TABLE d (x INT);").unwrap();
        p.exp_string("CREATE TABLE").unwrap();
        // Input sent before the prompt is back can be discarded when the line editor
        // puts the terminal into raw mode (a flush), so each line waits for it.
        p.exp_string("beedb> ").unwrap();
        p.send_line("INSERT INTO d VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9);")
            .unwrap();
        p.exp_string("INSERT 0 10").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line(LONG_QUERY).unwrap();
        cancel_after(&mut p, Duration::from_millis(500));
        p.exp_string("beedb> ").unwrap();

        // Two Ctrl-C in a row at an empty prompt leave the shell, saving history.
        p.send_control('c').unwrap();
        p.exp_string("press Ctrl-C again to exit").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_control('c').unwrap();
        p.exp_eof().unwrap();
        let history = std::fs::read_to_string(dir.path().join(".beedb_history")).unwrap();
        assert!(history.contains(LONG_QUERY), "{history}");
        assert!(history.contains("SELECT 40 + 2 AS answer;"), "{history}");
    }

    #[test]
    fn ctrl_c_on_a_half_typed_statement_clears_it_and_does_not_count_towards_exit() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = start(dir.path(), &[]);
        p.exp_string("beedb> ").unwrap();
        p.send_control('c').unwrap();
        p.exp_string("press Ctrl-C again to exit").unwrap();
        p.exp_string("beedb> ").unwrap();
        // Text on the line: Ctrl-C clears it, and starts the count again.
        p.send("SELECT").unwrap();
        p.send_control('c').unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line("SELECT 'still here' AS s;").unwrap();
        p.exp_string("still here").unwrap();
        p.exp_string("beedb> ").unwrap();
        p.send_line(".quit").unwrap();
        p.exp_eof().unwrap();
    }
}

// ---------------------------------------------------------------------------------
// Invalid and oversized input (issue 16)

/// Runs `beedb db -m csv` with `input` on standard input; (exit code, stdout, stderr).
fn pipe(db: &std::path::Path, input: Vec<u8>) -> (Option<i32>, String, String) {
    let mut child = beedb()
        .arg(db)
        .args(["-m", "csv"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn rows_of(db: &std::path::Path) -> String {
    let out = beedb().arg(db).args(["-m", "csv", "-c", "SELECT s FROM t ORDER BY s"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8(out.stdout).unwrap()
}

/// A bad byte on the first line of a multi-line string literal: the statement is
/// skipped whole, and the literal's later lines are never run as SQL (they were: the
/// `DELETE` inside the string emptied the table).
#[test]
fn invalid_utf8_on_stdin_skips_the_whole_statement_never_the_rest_of_a_literal() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("u.db");
    let out = beedb().arg(&db).args(["-c", "CREATE TABLE t (s text); INSERT INTO t VALUES ('keep1'), ('keep2')"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let (code, stdout, stderr) = pipe(
        &db,
        b"insert into t values ('\xff\ndelete from t;\n');\n\
          insert into t values ('after');\n\
          insert into t values ('x'); insert into t values ('y\xff'), ('z'); select 'same line';\n\
          /* \xff comment */ insert into t values ('after comment');\n\
          insert into t values (E'a\\'\xff\n;delete from t;');\n\
          insert into t values ('last');\n"
            .to_vec(),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stderr.matches("invalid byte sequence").count(), 4, "{stderr}");
    assert!(stderr.contains("line 1 of standard input"), "{stderr}");
    assert!(!stdout.contains("DELETE") && !stdout.contains("same line"), "{stdout}");
    // 'x' ran (completed before the bad byte); 'y'/'z' and the rest of that line did
    // not; the statement after the comment with a bad byte is dropped (the comment
    // is part of it).
    assert_eq!(rows_of(&db), "s\nafter\nkeep1\nkeep2\nlast\nx\n");
}

/// `-f` refuses a file with invalid UTF-8 whole, naming the line and byte.
#[test]
fn invalid_utf8_in_a_script_file_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.db");
    let script = dir.path().join("bad.sql");
    std::fs::write(&script, b"CREATE TABLE t (s text);\ninsert into t values ('\xff\ndelete from t;\n');\n").unwrap();
    let out = beedb().arg(&db).arg("-f").arg(&script).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("at byte 24 of line 2 of file"), "{stderr}");
    let out = beedb().arg(&db).args(["-c", "SELECT count(*) FROM t"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "nothing of the file ran, not even CREATE TABLE");
}

/// Input lines and statements are bounded (64 MiB): a longer one is an error
/// (SQLSTATE 54000) and the statements it is in are skipped; the input goes on after
/// the skipped statement's real end. A line with no end (`/dev/zero`, here a bounded
/// 65 MiB of zeros) does not grow a buffer without bound. `-f` refuses such a file.
#[test]
fn overlong_lines_and_statements_are_errors_and_the_input_goes_on() {
    const MAX: usize = 64 << 20;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("long.db");
    let out = beedb().arg(&db).args(["-c", "CREATE TABLE t (s text)"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let mut input = b"insert into t values ('before');\ninsert into t values ('".to_vec();
    // One line over the limit, inside a string literal holding a `;`.
    input.extend(std::iter::repeat_n(b'x', MAX + 10));
    input.extend(b";delete from t;\n');\ninsert into t values ('after line');\n");
    // A statement over the limit in short lines, inside a string again.
    input.extend(b"insert into t values ('");
    for _ in 0..(MAX / 1000 + 10) {
        input.extend(std::iter::repeat_n(b'y', 999));
        input.push(b'\n');
    }
    input.extend(b";delete from t;');\ninsert into t values ('after statement');\n");
    // Then zeros with no line end, to the end of the input.
    input.extend(std::iter::repeat_n(0u8, MAX + 1000));
    let (code, stdout, stderr) = pipe(&db, input);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(!stdout.contains("DELETE"), "{stdout}");
    assert!(stderr.contains("line 2 of standard input is longer than the maximum of 67108864 bytes (SQLSTATE 54000)"), "{stderr}");
    assert!(stderr.contains("is longer than the maximum of 67108864 bytes (SQLSTATE 54000); it is skipped"), "{stderr}");
    assert_eq!(stderr.matches("ERROR:").count(), 3, "{stderr}");
    assert_eq!(rows_of(&db), "s\nafter line\nafter statement\nbefore\n");

    let script = dir.path().join("zeros.sql");
    let mut zeros = b"insert into t values ('from file');\n".to_vec();
    zeros.extend(std::iter::repeat_n(0u8, MAX + 1));
    std::fs::write(&script, zeros).unwrap();
    let out = beedb().arg(&db).arg("-f").arg(&script).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("line 2 is longer than the maximum of 67108864 bytes"), "{stderr}");
    assert!(!rows_of(&db).contains("from file"));
}
