//! Functions and aggregates registered by the application (`Connection::
//! create_scalar_function`, `create_aggregate_function`): binding, evaluation a batch
//! at a time, NULLs, errors, result types, replacement between executions, and the
//! same answers with bees on and off.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::SmallInt(x) => Some(*x as i64),
        Value::Integer(x) => Some(*x as i64),
        Value::BigInt(x) => Some(*x),
        Value::Decimal(d) => d.to_string().parse().ok(),
        _ => None,
    }
}

use beedb_sql::{
    AggregateFunction, AggregateState, Connection, DataType, Database, Error, Result,
    ScalarFunction, Value,
};

/// `twice(x)`: x * 2 for integers, NULL for NULL; counts its calls and rows.
struct Twice {
    calls: AtomicUsize,
    rows: AtomicUsize,
}

impl ScalarFunction for Twice {
    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args {
            [DataType::SmallInt | DataType::Integer | DataType::BigInt] => Ok(DataType::BigInt),
            _ => Err(Error::undefined_function("twice takes one integer")),
        }
    }

    fn call(&self, args: &[Vec<Value>], rows: usize) -> Result<Vec<Value>> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.rows.fetch_add(rows, Ordering::Relaxed);
        Ok(args[0]
            .iter()
            .map(|v| match v {
                Value::Null => Value::Null,
                v => Value::BigInt(int(v).unwrap() * 2),
            })
            .collect())
    }
}

/// A function returning whatever `make` gives, declared as `ty`.
struct Returns {
    ty: DataType,
    make: fn(usize) -> Vec<Value>,
}

impl ScalarFunction for Returns {
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(self.ty)
    }

    fn call(&self, _: &[Vec<Value>], rows: usize) -> Result<Vec<Value>> {
        Ok((self.make)(rows))
    }
}

/// `mysum(x)`: the sum of the non-NULL integers, NULL for a group without any.
struct MySum;

impl AggregateFunction for MySum {
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::BigInt)
    }

    fn update(
        &self,
        states: &mut [Option<AggregateState>],
        groups: &[u32],
        args: &[Vec<Value>],
    ) -> Result<()> {
        for (k, &g) in groups.iter().enumerate() {
            let state = states[g as usize].get_or_insert_with(|| Box::new(None::<i64>));
            let sum = state.downcast_mut::<Option<i64>>().unwrap();
            if let Some(x) = int(&args[0][k]) {
                *sum = Some(sum.unwrap_or(0) + x);
            }
        }
        Ok(())
    }

    fn finish(&self, state: Option<&AggregateState>) -> Result<Value> {
        Ok(state
            .and_then(|s| *s.downcast_ref::<Option<i64>>().unwrap())
            .map_or(Value::Null, Value::BigInt))
    }
}

fn setup(bees: &str) -> Connection {
    let db = Database::open(":memory:").unwrap();
    let mut c = db.connect();
    c.set("bees", bees).unwrap();
    c.execute_batch(
        "CREATE TABLE t (g INTEGER, x INTEGER);
         INSERT INTO t SELECT i % 3, CASE WHEN i % 7 = 0 THEN NULL ELSE i END FROM generate_series(1, 5000) AS s(i);",
    )
    .unwrap();
    c
}

fn rows(c: &mut Connection, sql: &str) -> Vec<Vec<Value>> {
    c.query(sql, &[])
        .unwrap()
        .rows
        .into_iter()
        .map(|r| r.0)
        .collect()
}

#[test]
fn scalar_function_is_called_a_batch_at_a_time_and_agrees_with_sql() {
    for bees in ["on", "off"] {
        let mut c = setup(bees);
        let twice = Arc::new(Twice {
            calls: AtomicUsize::new(0),
            rows: AtomicUsize::new(0),
        });
        c.create_scalar_function("twice", Some(1), Some(twice.clone()))
            .unwrap();
        let got = rows(
            &mut c,
            "SELECT g, sum(TWICE(x)), count(twice(x)) FROM t WHERE twice(g) >= 0 GROUP BY g ORDER BY g",
        );
        let want = rows(
            &mut c,
            "SELECT g, sum(x * 2)::bigint, count(x) FROM t GROUP BY g ORDER BY g",
        );
        assert_eq!(got.len(), 3);
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g[0], w[0]);
            assert_eq!(int(&g[1]), int(&w[1]), "bees {bees}");
            assert_eq!(g[2], w[2]);
        }
        // 5,000 rows in batches of at most 1,024: a handful of calls per use, never one per row.
        let calls = twice.calls.load(Ordering::Relaxed);
        assert!(calls < 60, "{calls} calls for 3 × 5,000 rows");
        assert!(twice.rows.load(Ordering::Relaxed) >= 15_000);
        // A literal argument is not folded into a constant at planning time.
        let before = twice.calls.load(Ordering::Relaxed);
        assert_eq!(
            rows(&mut c, "SELECT twice(21)"),
            vec![vec![Value::BigInt(42)]]
        );
        assert_eq!(twice.calls.load(Ordering::Relaxed), before + 1);
        // The function refuses argument types it does not take, when binding.
        let e = c.query("SELECT twice('a')", &[]).unwrap_err();
        assert_eq!(e.sqlstate, "42883", "{e}");
        // A wrong argument count finds no function.
        let e = c.query("SELECT twice(1, 2)", &[]).unwrap_err();
        assert_eq!(e.sqlstate, "42883", "{e}");
    }
}

#[test]
fn aggregate_function_groups_nulls_and_empty_input() {
    for bees in ["on", "off"] {
        let mut c = setup(bees);
        c.create_aggregate_function("mysum", Some(1), Some(Arc::new(MySum)))
            .unwrap();
        let got = rows(
            &mut c,
            "SELECT g, mysum(x), mysum(x + 1) FROM t GROUP BY g ORDER BY g",
        );
        let want = rows(
            &mut c,
            "SELECT g, sum(x), sum(x + 1) FROM t GROUP BY g ORDER BY g",
        );
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g[0], w[0]);
            assert_eq!(int(&g[1]), int(&w[1]));
            assert_eq!(int(&g[2]), int(&w[2]));
        }
        assert_eq!(got.len(), 3);
        // No rows: one group that saw nothing.
        assert_eq!(
            rows(&mut c, "SELECT mysum(x) FROM t WHERE false"),
            vec![vec![Value::Null]]
        );
        // Only NULLs.
        assert_eq!(
            rows(&mut c, "SELECT mysum(NULL::int) FROM t"),
            vec![vec![Value::Null]]
        );
        // HAVING and ORDER BY on it; in a subquery.
        let got = rows(
            &mut c,
            "SELECT g FROM t GROUP BY g HAVING mysum(x) > 0 ORDER BY mysum(x) DESC LIMIT 1",
        );
        let want = rows(
            &mut c,
            "SELECT g FROM t GROUP BY g HAVING sum(x) > 0 ORDER BY sum(x) DESC LIMIT 1",
        );
        assert_eq!(got, want);
        let got = rows(
            &mut c,
            "SELECT (SELECT mysum(x) FROM t) = (SELECT sum(x) FROM t)",
        );
        assert_eq!(got, vec![vec![Value::Boolean(true)]]);
        // Not allowed where aggregates are not, and not as a window function yet.
        assert_eq!(
            c.query("SELECT x FROM t WHERE mysum(x) > 1", &[])
                .unwrap_err()
                .sqlstate,
            "42803"
        );
        assert_eq!(
            c.query("SELECT mysum(x) OVER () FROM t", &[])
                .unwrap_err()
                .sqlstate,
            "0A000"
        );
        assert_eq!(
            c.query("SELECT x, mysum(x) FROM t", &[])
                .unwrap_err()
                .sqlstate,
            "42803"
        );
    }
}

#[test]
fn results_are_cast_to_the_declared_type_or_refused() {
    let mut c = setup("on");
    let f = |ty, make| Some(Arc::new(Returns { ty, make }) as Arc<dyn ScalarFunction>);
    c.create_scalar_function(
        "as_double",
        Some(0),
        f(DataType::Double, |n| vec![Value::BigInt(3); n]),
    )
    .unwrap();
    assert_eq!(
        rows(&mut c, "SELECT as_double()"),
        vec![vec![Value::Double(3.0)]]
    );
    c.create_scalar_function(
        "bad_int",
        Some(0),
        f(DataType::Integer, |n| vec![Value::Text("x".into()); n]),
    )
    .unwrap();
    let e = c.query("SELECT bad_int()", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "22P02", "{e}");
    assert!(e.message.contains("bad_int"), "{e}");
    c.create_scalar_function(
        "too_big",
        Some(0),
        f(DataType::SmallInt, |n| vec![Value::BigInt(1 << 40); n]),
    )
    .unwrap();
    assert_eq!(
        c.query("SELECT too_big()", &[]).unwrap_err().sqlstate,
        "22003"
    );
    c.create_scalar_function("short", Some(0), f(DataType::Integer, |_| vec![]))
        .unwrap();
    let e = c.query("SELECT short() FROM t", &[]).unwrap_err();
    assert_eq!(e.sqlstate, "39004", "{e}");
}

#[test]
fn replacing_or_removing_a_function_is_seen_by_the_next_execution() {
    let mut c = setup("on");
    let one = |v: i64| {
        Some(Arc::new(Returns {
            ty: DataType::BigInt,
            make: if v == 1 {
                |n| vec![Value::BigInt(1); n]
            } else {
                |n| vec![Value::BigInt(2); n]
            },
        }) as Arc<dyn ScalarFunction>)
    };
    c.create_scalar_function("k", Some(0), one(1)).unwrap();
    let stmt = c.prepare("SELECT k() FROM t LIMIT 1").unwrap();
    assert_eq!(
        stmt.execute(&mut c, &[]).unwrap().rows[0].0,
        vec![Value::BigInt(1)]
    );
    c.create_scalar_function("k", Some(0), one(2)).unwrap();
    assert_eq!(
        stmt.execute(&mut c, &[]).unwrap().rows[0].0,
        vec![Value::BigInt(2)]
    );
    c.create_scalar_function("k", Some(0), None).unwrap();
    assert_eq!(stmt.execute(&mut c, &[]).unwrap_err().sqlstate, "42883");
    // Another connection never sees this one's functions.
    c.create_scalar_function("k", Some(0), one(1)).unwrap();
    let mut other = c.database().connect();
    assert_eq!(
        other.query("SELECT k()", &[]).unwrap_err().sqlstate,
        "42883"
    );
    // An application function overrides a built-in one of the same name.
    c.create_scalar_function("abs", Some(1), one(2)).unwrap();
    assert_eq!(rows(&mut c, "SELECT abs(-5)"), vec![vec![Value::BigInt(2)]]);
    // Bad names are refused.
    assert_eq!(
        c.create_scalar_function("a b", Some(0), one(1))
            .unwrap_err()
            .sqlstate,
        "42602"
    );
    assert_eq!(
        c.create_scalar_function("", Some(0), one(1))
            .unwrap_err()
            .sqlstate,
        "42602"
    );
}
