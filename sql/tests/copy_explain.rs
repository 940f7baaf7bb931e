//! COPY FROM (text with TPC-H's trailing delimiter, CSV with a header) and EXPLAIN
//! [ANALYZE]: statements whose behaviour needs files or plan text, so they are tested
//! here rather than in the .slt files.

use beedb_sql::{Database, Value};

fn rows(c: &mut beedb_sql::Connection, sql: &str) -> Vec<Vec<Value>> {
    c.query(sql, &[]).unwrap().rows.into_iter().map(|r| r.0).collect()
}

/// An EXPLAIN's lines, one per row.
fn plan(c: &mut beedb_sql::Connection, sql: &str) -> String {
    rows(c, sql)
        .into_iter()
        .map(|r| r[0].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn copy_text_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let tbl = dir.path().join("t.tbl");
    std::fs::write(&tbl, "1|one|1.50|2024-01-02|\n2|two|2.25|2024-02-03|\n3|\\N|0|2024-03-04|\n").unwrap();
    let csv = dir.path().join("t.csv");
    std::fs::write(&csv, "id,name,price,day\n4,\"four, with comma\",4.00,2024-04-05\n5,,5,2024-05-06\n6,\"say \"\"hi\"\"\",6,2024-06-07\n").unwrap();
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, price NUMERIC(6,2), day DATE)").unwrap();
    let r = c.execute(&format!("COPY t FROM '{}' (DELIMITER '|')", tbl.display()), &[]).unwrap();
    assert_eq!(r.tag, "COPY 3");
    assert_eq!(r.rows_affected, 3);
    let r = c.execute(&format!("COPY t FROM '{}' (FORMAT csv, HEADER true)", csv.display()), &[]).unwrap();
    assert_eq!(r.rows_affected, 3);
    let got = rows(&mut c, "SELECT id, name, price::text, day::text FROM t ORDER BY id");
    let text = |s: &str| Value::Text(s.into());
    assert_eq!(got[0], vec![Value::Integer(1), text("one"), text("1.50"), text("2024-01-02")]);
    assert_eq!(got[2][1], Value::Null);
    assert_eq!(got[3][1], text("four, with comma"));
    assert_eq!(got[4][1], Value::Null, "an unquoted empty CSV field is NULL");
    assert_eq!(got[5][1], text("say \"hi\""));
    assert_eq!(got[4][2], text("5.00"));
}

#[test]
fn copy_errors_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.tbl");
    std::fs::write(&bad, "1|a|\n2|b|extra|\n").unwrap();
    let badval = dir.path().join("badval.tbl");
    std::fs::write(&badval, "1|a\nx|b\n").unwrap();
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (id INTEGER, name TEXT)").unwrap();
    let e = c.execute(&format!("COPY t FROM '{}' (DELIMITER '|')", bad.display()), &[]).unwrap_err();
    assert!(e.message.contains("extra data after last expected column"), "{e}");
    assert!(e.message.contains("line 2"), "{e}");
    let e = c.execute(&format!("COPY t FROM '{}' (DELIMITER '|')", badval.display()), &[]).unwrap_err();
    assert!(e.message.contains("invalid input syntax for type integer: \"x\""), "{e}");
    assert!(e.message.contains("line 2"), "{e}");
    // The failed COPY left nothing behind.
    assert_eq!(rows(&mut c, "SELECT count(*) FROM t")[0][0], Value::BigInt(0));
    let e = c.execute("COPY t FROM '/nonexistent/file.tbl'", &[]).unwrap_err();
    assert!(e.message.contains("could not open file"), "{e}");
}

#[test]
fn explain_shows_access_paths_and_analyze_counts_rows() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT);
         CREATE TABLE b (a_id INTEGER, w INTEGER);
         INSERT INTO a VALUES (1, 'x'), (2, 'y'), (3, 'z');
         INSERT INTO b VALUES (1, 10), (1, 11), (3, 30);",
    )
    .unwrap();
    let p = plan(&mut c, "EXPLAIN SELECT v FROM a WHERE id = 2");
    assert!(p.contains("Index Scan"), "{p}");
    let p = plan(&mut c, "EXPLAIN SELECT v, w FROM a JOIN b ON a.id = b.a_id");
    assert!(p.contains("Hash Join"), "{p}");
    let p = plan(&mut c, "EXPLAIN ANALYZE SELECT v, w FROM a JOIN b ON a.id = b.a_id");
    assert!(p.contains(" rows=3 loops=1)"), "{p}");
    assert!(p.contains("Execution Time"), "{p}");
}

/// Relation sizes survive reopening: COPY stores the table's row count in the
/// catalog, so the first plan after open estimates from it (and the join's smaller
/// input is built), and ANALYZE counts again after other changes.
#[test]
fn row_counts_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sizes.beedb");
    let data = dir.path().join("big.tbl");
    let lines: String = (0..3000).map(|i| format!("{i}|{}\n", i % 10)).collect();
    std::fs::write(&data, lines).unwrap();
    {
        let db = Database::open(&path).unwrap();
        let mut c = db.connect();
        c.execute_batch("CREATE TABLE big (id INTEGER, k INTEGER); CREATE TABLE small (k INTEGER)").unwrap();
        c.execute(&format!("COPY big FROM '{}' (DELIMITER '|')", data.display()), &[]).unwrap();
        c.execute_batch("INSERT INTO small VALUES (1), (2); ANALYZE small").unwrap();
    }
    let db = Database::open(&path).unwrap();
    let mut c = db.connect();
    c.execute("SET bees = off", &[]).unwrap();
    let text = |c: &mut beedb_sql::Connection, sql: &str| -> Vec<String> {
        rows(c, sql).into_iter().map(|r| r[0].to_string()).collect()
    };
    let plan = text(&mut c, "EXPLAIN SELECT id FROM big");
    assert!(plan[2].starts_with("  ->  Seq Scan on big  (cost=") && plan[2].contains(" rows=3000 "), "{plan:?}");
    let plan = text(&mut c, "EXPLAIN (COSTS OFF) SELECT count(*) FROM small s JOIN big b ON s.k = b.k");
    // The join's second input (the build side) is its last operator line.
    let build = plan.iter().rfind(|l| l.contains("->  ")).cloned();
    assert!(build.is_some_and(|l| l.contains("Seq Scan on small")), "{plan:?}");
}

/// A line longer than COPY's maximum, or input without line ends (`/dev/zero`), is an
/// error naming the line after reading at most the maximum, not a line buffer that
/// grows until the process dies (issue 16).
#[test]
fn copy_lines_past_the_maximum_are_an_error() {
    use beedb_sql::MAX_COPY_LINE_BYTES;
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join("long.txt");
    let mut text = b"1|short\n2|".to_vec();
    text.resize(text.len() + MAX_COPY_LINE_BYTES + 10, b'x');
    text.extend_from_slice(b"\n3|short\n");
    std::fs::write(&long, &text).unwrap();
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch("CREATE TABLE t (id INTEGER, s TEXT)").unwrap();
    let e = c.execute(&format!("COPY t FROM '{}' (DELIMITER '|')", long.display()), &[]).unwrap_err();
    assert_eq!(e.sqlstate, "54000", "{e}");
    assert!(e.message.contains("line 2 of file") && e.message.contains("longer than COPY's maximum"), "{e}");
    let e = c.execute("COPY t FROM '/dev/zero'", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "54000", "{e}");
    assert!(e.message.contains("line 1 of file \"/dev/zero\""), "{e}");
    // A line at the maximum is read.
    let edge = dir.path().join("edge.txt");
    let mut text = b"4|".to_vec();
    text.resize(MAX_COPY_LINE_BYTES, b'y');
    text.extend_from_slice(b"\r\n");
    std::fs::write(&edge, &text).unwrap();
    c.execute(&format!("COPY t FROM '{}' (DELIMITER '|')", edge.display()), &[]).unwrap();
    assert_eq!(rows(&mut c, "SELECT length(s) FROM t")[0][0], Value::Integer(MAX_COPY_LINE_BYTES as i32 - 2));
}

/// EXPLAIN ANALYZE says how many tuples a join key filter dropped in a scan, and the
/// scan's actual rows are the tuples it passed on: 30 of 5,000 probe rows have one of
/// the build's keys (a key range this dense gets an exact bitmap).
#[test]
fn explain_analyze_counts_the_tuples_a_key_filter_dropped() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE probe (id INTEGER, k INTEGER);
         INSERT INTO probe SELECT g, g % 500 FROM generate_series(1, 5000) g;
         CREATE TABLE build (k INTEGER);
         INSERT INTO build VALUES (3), (7), (100);
         SET threads = 1",
    )
    .unwrap();
    let p = plan(&mut c, "EXPLAIN ANALYZE SELECT count(*) FROM probe JOIN build ON probe.k = build.k");
    let lines: Vec<&str> = p.lines().collect();
    let at = lines.iter().position(|l| l.contains("Seq Scan on probe")).unwrap_or_else(|| panic!("{p}"));
    assert!(p.contains("Key Filter: probe.k"), "{p}");
    // The scan's detail line sits under it, 6 columns further in than its arrow.
    let pad = " ".repeat(lines[at].find("->").unwrap() + 6);
    let details = || lines[at + 1..].iter().take_while(|l| !l.contains("->"));
    assert!(lines[at].contains(" rows=30 ") && details().any(|l| *l == format!("{pad}Rows Removed by Key Filter: 4970")), "{p}");
    c.execute_batch("SET optimizer_join_filter = off").unwrap();
    let p = plan(&mut c, "EXPLAIN ANALYZE SELECT count(*) FROM probe JOIN build ON probe.k = build.k");
    let scan = p.lines().find(|l| l.contains("Seq Scan on probe")).unwrap_or_else(|| panic!("{p}"));
    assert!(scan.contains(" rows=5000 ") && !p.contains("Removed by Key Filter"), "{p}");
}

/// EXPLAIN ANALYZE profiles each subplan on its own: its nodes show their own rows
/// and loops (the executions of a correlated subplan), not the outer plan's figures,
/// and a subplan that never ran says so on every line.
#[test]
fn explain_analyze_profiles_subplans_apart_from_the_outer_plan() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE o (a INTEGER, b INTEGER);
         CREATE TABLE i (x INTEGER, y INTEGER);
         INSERT INTO o SELECT g, g % 3 FROM generate_series(1, 5) g;
         INSERT INTO i SELECT g, g FROM generate_series(1, 40) g;
         SET optimizer_decorrelate = off;",
    )
    .unwrap();
    // A correlated scalar subquery, kept nested: five executions of the subplan,
    // each scanning all 40 rows of i.
    let p = plan(&mut c, "EXPLAIN ANALYZE SELECT a, (SELECT count(*) FROM i WHERE i.x > o.a) FROM o");
    let sub = p.split("\nSubPlan 1").nth(1).unwrap_or_else(|| panic!("no SubPlan in:\n{p}"));
    assert!(sub.contains(" rows=5 loops=5)"), "the subplan's root ran once per outer row:\n{p}");
    // i's scan ran five times and kept 39 + 38 + 37 + 36 + 35 rows in all.
    assert!(sub.contains(" rows=185 loops=5)"), "{p}");
    assert!(!sub.contains("never executed"), "{p}");
    // An uncorrelated subplan runs once.
    let p = plan(&mut c, "EXPLAIN ANALYZE SELECT a FROM o WHERE a < (SELECT max(y) FROM i WHERE y < 4)");
    let sub = p.split("\nSubPlan 1").nth(1).unwrap_or_else(|| panic!("no SubPlan in:\n{p}"));
    assert!(sub.contains(" rows=1 loops=1)"), "{p}");
    // A subplan the outer plan never reached (no outer rows).
    let p = plan(&mut c, "EXPLAIN ANALYZE SELECT a, (SELECT count(*) FROM i WHERE i.x > o.a) FROM o WHERE a > 100");
    let sub = p.split("\nSubPlan 1").nth(1).unwrap_or_else(|| panic!("no SubPlan in:\n{p}"));
    // Every operator line of it (its root, and the lines with an arrow).
    let operators: Vec<&str> = sub.lines().skip(1).filter(|l| l.starts_with("  ") && (l.contains("->  ") || !l[2..].starts_with(' '))).collect();
    assert!(operators.len() >= 2 && operators.iter().all(|l| l.ends_with(" (never executed)")), "{p}");
}

/// EXPLAIN (FORMAT JSON): one row holding a valid JSON document with PostgreSQL's
/// layout and key names, the same tree as the text layout, and under ANALYZE the
/// same counters.
#[test]
fn explain_format_json_is_the_text_plan_as_a_json_document() {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.execute_batch(
        "CREATE TABLE o (a INTEGER PRIMARY KEY, b TEXT);
         CREATE TABLE i (x INTEGER, y INTEGER);
         INSERT INTO o SELECT g, 'b\"' || (g % 3) FROM generate_series(1, 50) g;
         INSERT INTO i SELECT g % 7, g FROM generate_series(1, 40) g;
         ANALYZE;
         SET bees = off; SET threads = 1;",
    )
    .unwrap();
    let sql = "SELECT b, count(*) FROM o JOIN i ON o.a = i.x WHERE a < (SELECT max(y) FROM i) GROUP BY b ORDER BY b";
    let text = plan(&mut c, &format!("EXPLAIN {sql}"));
    let json_rows = rows(&mut c, &format!("EXPLAIN (FORMAT JSON) {sql}"));
    assert_eq!(json_rows.len(), 1, "one row, as PostgreSQL gives");
    let doc: serde_json::Value = serde_json::from_str(&json_rows[0][0].to_string()).expect("valid JSON");
    let top = &doc[0];
    // Every node of the text plan is in the JSON tree, in the same pre-order.
    fn node_types(n: &serde_json::Value, out: &mut Vec<String>) {
        out.push(n["Node Type"].as_str().expect("Node Type").to_string());
        for p in n["Plans"].as_array().into_iter().flatten() {
            node_types(p, out);
        }
    }
    let mut types = Vec::new();
    node_types(&top["Plan"], &mut types);
    // The operator lines: the root and each line with an arrow (the others are
    // details).
    let main_text: Vec<&str> =
        text.split("\nSubPlan 1").next().unwrap().lines().enumerate().filter(|(i, l)| *i == 0 || l.contains("->  ")).map(|(_, l)| l).collect();
    assert_eq!(types.len(), main_text.len(), "{text}\n{doc:#}");
    for (t, line) in types.iter().zip(&main_text) {
        // "Hash Join" is "Hash Left Join" in text for a left join, as in PostgreSQL.
        assert!(line.contains(t.split(' ').next().unwrap()), "{t} vs {line}");
    }
    assert!(top["Plan"]["Plan Rows"].as_u64().is_some() && top["Plan"]["Total Cost"].as_f64().is_some(), "{doc:#}");
    assert!(top["Plan"]["Plan Width"].as_u64().is_some(), "{doc:#}");
    // Keys are arrays, as in PostgreSQL; the uncorrelated subquery is listed.
    let s = doc.to_string();
    assert!(s.contains(r#""Sort Key":["b"]"#), "{s}");
    assert_eq!(top["Subplans"][0]["Subplan Name"], "SubPlan 1", "{doc:#}");
    assert_eq!(top["Subplans"][0]["Correlated"], false);
    // COSTS OFF leaves the estimates out; ANALYZE adds the counters and the time.
    let r = rows(&mut c, &format!("EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON) {sql}"));
    let doc: serde_json::Value = serde_json::from_str(&r[0][0].to_string()).unwrap();
    let root = &doc[0]["Plan"];
    assert!(root.get("Total Cost").is_none(), "{doc:#}");
    assert_eq!(root["Actual Rows"], 3, "{doc:#}");
    assert_eq!(root["Actual Loops"], 1);
    assert!(doc[0]["Execution Time"].as_f64().is_some());
    assert!(doc[0]["Subplans"][0]["Plan"]["Actual Rows"].as_u64() == Some(1), "{doc:#}");
    // A string with quotes and backslashes stays valid JSON.
    let r = rows(&mut c, r#"EXPLAIN (FORMAT JSON) SELECT * FROM o WHERE b = 'q"\'"#);
    let doc: serde_json::Value = serde_json::from_str(&r[0][0].to_string()).expect("escaped");
    assert!(doc.to_string().contains(r#"(b = 'q\"\\')"#), "{doc}");
    // Other formats are refused clearly; TEXT is the default.
    let e = c.query("EXPLAIN (FORMAT YAML) SELECT 1", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "0A000", "{e}");
    let e = c.query("EXPLAIN (FORMAT XSLT) SELECT 1", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "22023", "{e}");
}
