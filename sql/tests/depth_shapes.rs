//! Every shape of deep input the grammar allows, 5,000 deep (issue 11's safety rule:
//! every recursive binder and planner pass survives 5,000-deep inputs), in one table:
//! each statement gets its answer or a clean refusal with SQLSTATE 54001 (too deeply
//! nested: more than 200 levels of parentheses, CASE, NOT, subqueries; or too complex:
//! more than 2,000 operators in one chain) — on a thread with a 2 MiB stack, with the
//! optimizer's rules on and off. `depth.rs` has the larger and longer forms (FROM
//! lists and JOIN chains of 7,500 tables — slow enough to run once there, not twice
//! here —, 50,000-term OR chains, address-space caps).

use beedb_sql::{Connection, Database};

const N: usize = 5000;

/// What a statement must give.
enum Expect {
    /// One row, one integer column.
    Count(i64),
    /// An error with this SQLSTATE.
    Error(&'static str),
}

fn shapes() -> Vec<(&'static str, String, Expect)> {
    use Expect::*;
    let rep = |s: &str, n: usize| s.repeat(n);
    let list = |f: &dyn Fn(usize) -> String, sep: &str| (0..N).map(f).collect::<Vec<_>>().join(sep);
    vec![
        ("UNION ALL chain", format!("SELECT count(*) FROM ({}) s", list(&|i| format!("SELECT {i} AS v"), " UNION ALL ")), Count(N as i64)),
        ("UNION chain", format!("SELECT count(*) FROM ({}) s", list(&|i| format!("SELECT {} AS v", i % 10), " UNION ")), Count(10)),
        ("INTERSECT chain", format!("SELECT count(*) FROM ({}) s", list(&|_| "SELECT x FROM t".into(), " INTERSECT ")), Count(1)),
        ("EXCEPT chain", format!("SELECT count(*) FROM ({}) s", list(&|i| format!("SELECT x + {i} FROM t"), " EXCEPT ")), Count(1)),
        ("CTE chain", format!("WITH {} SELECT count(*) FROM c{}", list(&|i| if i == 0 { "c0 AS (SELECT x FROM t)".into() } else { format!("c{i} AS (SELECT x FROM c{})", i - 1) }, ", "), N - 1), Count(1)),
        ("IN list", format!("SELECT count(*) FROM t WHERE x IN ({})", list(&|i| i.to_string(), ", ")), Count(1)),
        ("VALUES rows", format!("SELECT count(*) FROM (VALUES {}) v(a)", list(&|i| format!("({i})"), ", ")), Count(N as i64)),
        ("AND chain", format!("SELECT count(*) FROM t WHERE {}", list(&|_| "x = 1".into(), " AND ")), Error("54001")),
        ("OR chain", format!("SELECT count(*) FROM t WHERE {}", list(&|i| format!("x = {i}"), " OR ")), Error("54001")),
        ("arithmetic chain", format!("SELECT {}", list(&|_| "1".into(), " + ")), Error("54001")),
        ("concatenation chain", format!("SELECT count(*) FROM t WHERE {} <> ''", list(&|_| "x::text".into(), " || ")), Error("54001")),
        ("cast chain", format!("SELECT count(*) FROM t WHERE x{} = 1", rep("::int", N)), Error("54001")),
        ("parentheses", format!("SELECT count(*) FROM t WHERE {}x = 1{}", rep("(", N), rep(")", N)), Error("54001")),
        ("NOT chain", format!("SELECT count(*) FROM t WHERE {}x = 1", rep("NOT ", N)), Error("54001")),
        ("unary minus chain", format!("SELECT count(*) FROM t WHERE {}x = -1", rep("- ", N)), Error("54001")),
        ("CASE nesting", format!("SELECT count({}x{}) FROM t", rep("CASE WHEN x = 1 THEN ", N), rep(" END", N)), Error("54001")),
        ("function nesting", format!("SELECT count({}x{}) FROM t", rep("coalesce(", N), rep(", 0)", N)), Error("54001")),
        ("scalar subqueries", format!("SELECT count({}x{}) FROM t", rep("(SELECT ", N), rep(")", N)), Error("54001")),
        ("derived tables", format!("SELECT count(*) FROM {}t{}", rep("(SELECT * FROM ", N), rep(") s", N)), Error("54001")),
        ("EXISTS nesting", format!("SELECT count(*) FROM t WHERE {}true{}", rep("EXISTS (SELECT 1 FROM t WHERE ", N), rep(")", N)), Error("54001")),
        ("IN subqueries", format!("SELECT count(*) FROM t WHERE x IN {}(1){}", rep("(SELECT x FROM t WHERE x IN ", N), rep(")", N)), Error("54001")),
    ]
}

fn run(c: &mut Connection, name: &str, sql: &str, expect: &Expect) {
    match (c.query(sql, &[]), expect) {
        (Ok(r), Expect::Count(n)) => assert_eq!(r.rows[0].get::<i64>(0).unwrap(), *n, "{name}"),
        (Err(e), Expect::Error(state)) => assert_eq!(e.sqlstate, *state, "{name}: {e}"),
        (Ok(_), Expect::Error(state)) => panic!("{name}: answered, expected SQLSTATE {state}"),
        (Err(e), Expect::Count(_)) => panic!("{name}: {e}"),
    }
}

#[test]
fn every_shape_5000_deep_answers_or_is_refused_cleanly_on_a_2_mib_stack() {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let db = Database::open(":memory:").unwrap();
            let mut c = db.connect();
            c.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)").unwrap();
            let shapes = shapes();
            for setting in ["on", "off"] {
                for rule in ["optimizer_decorrelate", "optimizer_join_order", "optimizer_filter_pushdown", "optimizer_simplify"] {
                    c.execute(&format!("SET {rule} = {setting}"), &[]).unwrap();
                }
                for (name, sql, expect) in &shapes {
                    let started = std::time::Instant::now();
                    run(&mut c, name, sql, expect);
                    eprintln!("{name}, rules {setting}: {:?}", started.elapsed());
                }
            }
        })
        .unwrap()
        .join()
        .unwrap();
}
