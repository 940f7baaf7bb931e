use std::sync::Arc;

use beedb_storage::{Store, StoreOptions, WriteTxn};

use super::dml::{
    create_btree, create_heap, create_index_entries, delete_row, insert_row, update_row,
};
use super::tuple_codec::{EncodedRow, decode_row, index_key};
use super::*;
use crate::catalog::{ColumnDef, IndexDef, TableDef};
use crate::expr::Expr;
use crate::plan::{Access, AggCall, AggFunc, JoinKind, OutputColumn, SetOpKind, SortKey};
use crate::types::{DataType, Date, Decimal, Interval, Timestamp};

fn store() -> Store {
    Store::open(":memory:", StoreOptions::default()).unwrap().0
}

fn col(name: &str, ty: DataType, not_null: bool) -> ColumnDef {
    ColumnDef {
        name: name.into(),
        ty,
        not_null,
        default: None,
    }
}

/// A table with indexes given as (name, columns, unique).
fn table(
    w: &WriteTxn,
    name: &str,
    cols: Vec<ColumnDef>,
    indexes: &[(&str, Vec<usize>, bool)],
) -> Arc<TableDef> {
    let heap = create_heap(w).unwrap();
    let idx = indexes
        .iter()
        .map(|(n, c, u)| IndexDef {
            name: n.to_string(),
            columns: c.clone(),
            unique: *u,
            primary: false,
            root: create_btree(w).unwrap(),
            clustered: false,
        })
        .collect();
    Arc::new(TableDef::new(1, name.into(), cols, heap, idx).unwrap())
}

fn ints(t: &TableDef, w: &WriteTxn, rows: &[&[Option<i32>]]) {
    for r in rows {
        let v: Vec<Value> = r
            .iter()
            .map(|x| x.map_or(Value::Null, Value::Integer))
            .collect();
        insert_row(w, t, &v).unwrap();
    }
}

fn scan_plan(t: &Arc<TableDef>, columns: Vec<usize>, access: Access) -> Plan {
    let schema = columns
        .iter()
        .map(|&c| OutputColumn {
            name: t.columns[c].name.clone(),
            ty: t.columns[c].ty,
        })
        .collect::<Vec<_>>();
    Plan::new(
        Node::TableScan {
            table: t.clone(),
            columns,
            filter: None,
            access,
            with_tid: false,
            bees: None,
        },
        schema,
    )
}

fn scan(t: &Arc<TableDef>) -> Plan {
    scan_plan(t, (0..t.columns.len()).collect(), Access::Heap)
}

static NEVER: crate::exec::Interrupt = crate::exec::Interrupt::never();

fn ctx<'a>(r: &'a (dyn beedb_storage::PageRead + Sync), subs: &'a [Subplan]) -> ExecContext<'a> {
    ExecContext {
        reader: r,
        params: &[],
        subqueries: subs,
        memory_limit: 64 << 20,
        profile: None,
        interrupt: &NEVER,
        sequences: None,
    }
}

fn rows(r: &(dyn beedb_storage::PageRead + Sync), p: &Plan) -> Vec<Vec<Value>> {
    collect(p, &ctx(r, &[])).unwrap()
}

fn i(v: i32) -> Value {
    Value::Integer(v)
}

fn sorted(mut v: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    v.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    v
}

fn ocols(p: &[&Plan]) -> crate::plan::Schema {
    p.iter().flat_map(|p| p.schema.clone()).collect()
}

fn int_col(i: usize) -> Expr {
    Expr::column(i, DataType::Integer)
}

fn every_type() -> Vec<(DataType, Value)> {
    vec![
        (DataType::Boolean, Value::Boolean(true)),
        (DataType::SmallInt, Value::SmallInt(-7)),
        (DataType::Integer, Value::Integer(123456)),
        (DataType::BigInt, Value::BigInt(-9_000_000_000)),
        (DataType::Real, Value::Real(1.5)),
        (DataType::Double, Value::Double(-2.25)),
        (
            DataType::decimal(10, 2).unwrap(),
            Value::Decimal(Decimal::new(12345, 2).unwrap()),
        ),
        (
            DataType::NUMERIC,
            Value::Decimal(Decimal::new(-31415, 4).unwrap()),
        ),
        (DataType::Date, Value::Date(Date(8000))),
        (
            DataType::Timestamp,
            Value::Timestamp(Timestamp(1_234_567_890)),
        ),
        (
            DataType::Interval,
            Value::Interval(Interval::new(1, -2, 3_000_000)),
        ),
        (DataType::Char(5), Value::Char("ab   ".into())),
        (DataType::Varchar(Some(10)), Value::Varchar("héllo".into())),
        (DataType::Text, Value::Text("x".repeat(10))),
    ]
}

#[test]
fn codec_round_trips_every_type_with_nulls_and_long_values() {
    let s = store();
    let w = s.begin_write().unwrap();
    let types = every_type();
    let cols = types
        .iter()
        .enumerate()
        .map(|(k, (t, _))| col(&format!("c{k}"), *t, false))
        .collect();
    let t = table(&w, "t", cols, &[]);
    let row: Vec<Value> = types.iter().map(|(_, v)| v.clone()).collect();
    let nulls: Vec<Value> = types.iter().map(|_| Value::Null).collect();
    let mut long = row.clone();
    *long.last_mut().unwrap() = Value::Text("long".repeat(5000));
    for r in [&row, &nulls, &long] {
        let enc = EncodedRow::encode(&t, r).unwrap();
        let bytes = t.layout.encode(&enc.attrs()).unwrap();
        if r.len() == long.len() && r[13] == long[13] {
            continue; // encoded inline would be too long for a page; see below
        }
        assert_eq!(&decode_row(&w, &t, &bytes).unwrap(), r);
    }
    for r in [&row, &nulls, &long] {
        insert_row(&w, &t, r).unwrap();
    }
    let got = rows(&w, &scan(&t));
    assert_eq!(got, vec![row.clone(), nulls, long]);
    // numeric(p,s) is stored at the column scale: 1.5 reads back as 1.50 (equal).
    let mut r2 = row.clone();
    r2[6] = Value::Decimal(Decimal::new(15, 1).unwrap());
    let bytes = t
        .layout
        .encode(&EncodedRow::encode(&t, &r2).unwrap().attrs())
        .unwrap();
    match &decode_row(&w, &t, &bytes).unwrap()[6] {
        Value::Decimal(d) => assert_eq!((d.unscaled(), d.scale()), (150, 2)),
        v => panic!("{v:?}"),
    }
}

/// The generic scan's column-at-a-time decoder ([`RowDecoder::decode_run`]) against
/// the tuple-at-a-time one it replaced on the scan path: every type, NULLs one time
/// in four, runs of 0, 1 and many tuples, and column choices that take the one- and
/// two-column path, the fixed-offset path, the deforming path, a column twice, and
/// the last column only.
#[test]
fn decode_run_matches_tuple_at_a_time() {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use super::tuple_codec::RowDecoder;
    let s = store();
    let w = s.begin_write().unwrap();
    let types = every_type();
    let cols = types.iter().enumerate().map(|(k, (t, _))| col(&format!("c{k}"), *t, false)).collect();
    let t = table(&w, "t", cols, &[]);
    let mut rng = StdRng::seed_from_u64(12);
    let mut buf = Vec::new();
    let mut items = Vec::new();
    for n in 0..200i32 {
        let row: Vec<Value> = types
            .iter()
            .map(|(ty, v)| match (rng.random_range(0..4), ty) {
                (0, _) => Value::Null,
                (_, DataType::Integer) => Value::Integer(rng.random_range(-1000..1000) * n),
                (_, DataType::Text) => Value::Text("y".repeat(rng.random_range(0..300))),
                _ => v.clone(),
            })
            .collect();
        let bytes = t.layout.encode(&EncodedRow::encode(&t, &row).unwrap().attrs()).unwrap();
        let start = buf.len();
        buf.extend_from_slice(&bytes);
        items.push(((), start, buf.len()));
    }
    let last = types.len() - 1;
    let choices: Vec<Vec<usize>> =
        vec![vec![], vec![2], vec![last, 6], (0..types.len()).collect(), vec![6, 3, 6, 12], vec![5, 0, 3, 9], vec![last]];
    for columns in choices {
        let dec = RowDecoder::new(&t, &columns);
        for run in [0, 1, 2, items.len()] {
            let mut one_by_one = dec.new_vectors(run);
            for &(_, s, e) in &items[..run] {
                dec.decode_into(&w, &t, &buf[s..e], &mut one_by_one).unwrap();
            }
            let mut by_run = dec.new_vectors(run);
            dec.decode_run(&w, &t, &items[..run], &buf, &mut by_run).unwrap();
            for (a, b) in one_by_one.iter().zip(&by_run) {
                assert_eq!(a.len(), b.len(), "columns {columns:?}, run {run}");
                for i in 0..a.len() {
                    assert_eq!(a.value(i), b.value(i), "columns {columns:?}, run {run}, row {i}");
                    assert_eq!(a.is_null(i), b.is_null(i));
                }
            }
        }
    }
}

#[test]
fn scans_empty_exact_batch_and_one_more() {
    let s = store();
    let w = s.begin_write().unwrap();
    let t = table(&w, "t", vec![col("a", DataType::Integer, false)], &[]);
    assert!(rows(&w, &scan(&t)).is_empty());
    for n in 0..BATCH_SIZE as i32 {
        insert_row(&w, &t, &[i(n)]).unwrap();
    }
    let mut batches = Vec::new();
    run(&scan(&t), &ctx(&w, &[]), &mut |b| {
        batches.push(b.rows());
        Ok(true)
    })
    .unwrap();
    // A heap scan never splits a page between batches (it decodes pages in place,
    // under their latch), so it pushes a batch early when the next page might not
    // fit: batches are full up to a page's worth of rows.
    let well_filled = |batches: &[usize]| {
        let (last, full) = batches.split_last().unwrap();
        full.iter().all(|&n| n <= BATCH_SIZE && n > BATCH_SIZE / 2) && *last <= BATCH_SIZE
    };
    assert_eq!(batches.iter().sum::<usize>(), BATCH_SIZE);
    assert!(well_filled(&batches), "{batches:?}");
    insert_row(&w, &t, &[Value::Null]).unwrap();
    batches.clear();
    run(&scan(&t), &ctx(&w, &[]), &mut |b| {
        batches.push(b.rows());
        Ok(true)
    })
    .unwrap();
    assert_eq!(batches.iter().sum::<usize>(), BATCH_SIZE + 1);
    assert!(batches.len() > 1 && well_filled(&batches), "{batches:?}");
    let all = rows(&w, &scan(&t));
    assert_eq!(all.len(), BATCH_SIZE + 1);
    assert_eq!(all[5], vec![i(5)]);
    assert_eq!(all[BATCH_SIZE], vec![Value::Null]);
}

#[test]
fn scan_with_tid_and_projection_of_columns() {
    let s = store();
    let w = s.begin_write().unwrap();
    let t = table(
        &w,
        "t",
        vec![
            col("a", DataType::Integer, false),
            col("b", DataType::Text, false),
        ],
        &[],
    );
    let tid = insert_row(&w, &t, &[i(1), Value::Text("x".into())]).unwrap();
    let mut p = scan_plan(&t, vec![1], Access::Heap);
    if let Node::TableScan { with_tid, .. } = &mut p.node {
        *with_tid = true;
    }
    p.schema.push(OutputColumn {
        name: "ctid".into(),
        ty: DataType::BigInt,
    });
    let got = rows(&w, &p);
    assert_eq!(
        got,
        vec![vec![
            Value::Text("x".into()),
            Value::BigInt(tid_to_i64(tid))
        ]]
    );
    assert_eq!(i64_to_tid(tid_to_i64(tid)), tid);
}

fn lit(v: i32) -> Expr {
    Expr::literal(i(v), DataType::Integer)
}

fn index_scan(
    t: &Arc<TableDef>,
    index: usize,
    eq: Vec<Expr>,
    lower: Option<(Expr, bool)>,
    upper: Option<(Expr, bool)>,
) -> Plan {
    scan_plan(
        t,
        (0..t.columns.len()).collect(),
        Access::Index {
            index,
            eq,
            lower,
            upper,
            skip_nulls: false,
            backward: false,
            any: Vec::new(),
        },
    )
}

#[test]
fn index_scans_eq_ranges_and_prefixes() {
    let s = store();
    let w = s.begin_write().unwrap();
    let t = table(
        &w,
        "t",
        vec![
            col("a", DataType::Integer, false),
            col("b", DataType::Integer, false),
        ],
        &[("t_a", vec![0], false), ("t_ab", vec![0, 1], false)],
    );
    for a in 0..10 {
        for b in 0..3 {
            ints(&t, &w, &[&[Some(a), Some(b)]]);
        }
    }
    ints(&t, &w, &[&[Some(5), None], &[None, Some(1)]]);
    let count = |p: Plan| rows(&w, &p).len();
    assert_eq!(count(index_scan(&t, 0, vec![lit(5)], None, None)), 4);
    assert_eq!(
        count(index_scan(
            &t,
            0,
            vec![],
            Some((lit(3), true)),
            Some((lit(5), false))
        )),
        6
    );
    assert_eq!(
        count(index_scan(
            &t,
            0,
            vec![],
            Some((lit(3), false)),
            Some((lit(5), true))
        )),
        7
    );
    assert_eq!(
        count(index_scan(&t, 0, vec![], Some((lit(8), false)), None)),
        3
    );
    assert_eq!(
        count(index_scan(&t, 0, vec![], None, Some((lit(0), true)))),
        3
    );
    assert_eq!(
        count(index_scan(&t, 0, vec![], None, Some((lit(-1), true)))),
        0
    );
    // composite: a = 5 AND b >= 1 (the NULL b is not in the range)
    let got = rows(
        &w,
        &index_scan(&t, 1, vec![lit(5)], Some((lit(1), true)), None),
    );
    assert_eq!(got, vec![vec![i(5), i(1)], vec![i(5), i(2)]]);
    assert_eq!(count(index_scan(&t, 1, vec![lit(5)], None, None)), 4);
    assert_eq!(
        count(index_scan(&t, 1, vec![lit(5), lit(2)], None, None)),
        1
    );
    assert_eq!(
        count(index_scan(
            &t,
            1,
            vec![Expr::literal(Value::Null, DataType::Integer)],
            None,
            None
        )),
        0
    );
    // out of range key for an integer column
    assert_eq!(
        count(index_scan(
            &t,
            0,
            vec![Expr::literal(Value::BigInt(1 << 40), DataType::BigInt)],
            None,
            None
        )),
        0
    );
}

#[test]
fn index_scan_decimal_bounds_between_keys() {
    let s = store();
    let w = s.begin_write().unwrap();
    let ty = DataType::decimal(5, 2).unwrap();
    let t = table(
        &w,
        "t",
        vec![col("d", ty, false)],
        &[("t_d", vec![0], false)],
    );
    for u in [150, 155, 156, 160] {
        insert_row(&w, &t, &[Value::Decimal(Decimal::new(u, 2).unwrap())]).unwrap();
    }
    let d = |u: i128, s: u8| {
        Expr::literal(
            Value::Decimal(Decimal::new(u, s).unwrap()),
            DataType::NUMERIC,
        )
    };
    let count = |p: Plan| rows(&w, &p).len();
    assert_eq!(count(index_scan(&t, 0, vec![d(1555, 3)], None, None)), 0);
    assert_eq!(count(index_scan(&t, 0, vec![d(155, 2)], None, None)), 1);
    assert_eq!(
        count(index_scan(&t, 0, vec![], Some((d(1555, 3), false)), None)),
        2
    );
    assert_eq!(
        count(index_scan(&t, 0, vec![], None, Some((d(1555, 3), false)))),
        2
    );
    assert_eq!(
        count(index_scan(&t, 0, vec![], None, Some((d(155, 2), false)))),
        1
    );
}

fn join_plan(l: &Plan, r: &Plan, kind: JoinKind, keyed: bool) -> Plan {
    let schema = match kind {
        JoinKind::Semi | JoinKind::Anti => l.schema.clone(),
        _ => ocols(&[l, r]),
    };
    let (lk, rk) = if keyed {
        (vec![int_col(0)], vec![int_col(0)])
    } else {
        (vec![], vec![])
    };
    Plan::new(
        Node::Join {
            left: Box::new(l.clone()),
            right: Box::new(r.clone()),
            kind,
            on: None,
            method: if keyed {
                crate::plan::JoinMethod::Hash { build: crate::plan::JoinSide::Right, key_filter: false, bee: None }
            } else {
                crate::plan::JoinMethod::NestedLoop
            },
            left_keys: lk,
            right_keys: rk,
        },
        schema,
    )
}

#[test]
fn joins_of_every_kind_with_null_keys_and_duplicates() {
    let s = store();
    let w = s.begin_write().unwrap();
    let l = table(
        &w,
        "l",
        vec![
            col("a", DataType::Integer, false),
            col("x", DataType::Integer, false),
        ],
        &[],
    );
    let r = table(
        &w,
        "r",
        vec![
            col("a", DataType::Integer, false),
            col("y", DataType::Integer, false),
        ],
        &[],
    );
    ints(
        &l,
        &w,
        &[
            &[Some(1), Some(10)],
            &[Some(2), Some(20)],
            &[None, Some(30)],
            &[Some(4), Some(40)],
        ],
    );
    ints(
        &r,
        &w,
        &[
            &[Some(1), Some(100)],
            &[Some(1), Some(101)],
            &[None, Some(300)],
            &[Some(5), Some(500)],
        ],
    );
    let (lp, rp) = (scan(&l), scan(&r));
    let n = Value::Null;
    let run_kind = |k| sorted(rows(&w, &join_plan(&lp, &rp, k, true)));
    assert_eq!(
        run_kind(JoinKind::Inner),
        sorted(vec![
            vec![i(1), i(10), i(1), i(100)],
            vec![i(1), i(10), i(1), i(101)]
        ])
    );
    assert_eq!(run_kind(JoinKind::Left).len(), 5);
    assert!(run_kind(JoinKind::Left).contains(&vec![n.clone(), i(30), n.clone(), n.clone()]));
    assert_eq!(run_kind(JoinKind::Right).len(), 4);
    assert!(run_kind(JoinKind::Right).contains(&vec![n.clone(), n.clone(), n.clone(), i(300)]));
    assert_eq!(run_kind(JoinKind::Full).len(), 7);
    assert_eq!(run_kind(JoinKind::Semi), vec![vec![i(1), i(10)]]);
    assert_eq!(
        run_kind(JoinKind::Anti),
        sorted(vec![
            vec![i(2), i(20)],
            vec![n.clone(), i(30)],
            vec![i(4), i(40)]
        ])
    );
    // nested loop (no keys): a cross join, and semi/anti against an empty side
    assert_eq!(
        rows(&w, &join_plan(&lp, &rp, JoinKind::Inner, false)).len(),
        16
    );
    let e = table(&w, "e", vec![col("a", DataType::Integer, false)], &[]);
    let ep = scan(&e);
    assert_eq!(
        rows(&w, &join_plan(&lp, &ep, JoinKind::Left, false)).len(),
        4
    );
    assert_eq!(
        rows(&w, &join_plan(&lp, &ep, JoinKind::Anti, true)).len(),
        4
    );
    assert_eq!(
        rows(&w, &join_plan(&lp, &ep, JoinKind::Semi, false)).len(),
        0
    );
    assert_eq!(
        rows(&w, &join_plan(&ep, &lp, JoinKind::Right, false)).len(),
        4
    );
}

#[test]
fn big_join_crosses_batches() {
    let s = store();
    let w = s.begin_write().unwrap();
    let l = table(&w, "l", vec![col("a", DataType::Integer, false)], &[]);
    for k in 0..3000 {
        insert_row(&w, &l, &[i(k % 1500)]).unwrap();
    }
    let p = scan(&l);
    assert_eq!(
        rows(&w, &join_plan(&p, &p, JoinKind::Inner, true)).len(),
        6000
    );
}

fn agg(func: AggFunc, arg: Option<Expr>, distinct: bool, ty: DataType) -> AggCall {
    AggCall {
        udf: None,
        func,
        arg,
        arg2: None,
        distinct,
        order: Vec::new(),
        ty,
    }
}

fn agg_plan(input: &Plan, groups: Vec<Expr>, aggs: Vec<AggCall>) -> Plan {
    let mut schema: Vec<OutputColumn> = groups
        .iter()
        .map(|g| OutputColumn {
            name: "g".into(),
            ty: g.ty,
        })
        .collect();
    schema.extend(aggs.iter().map(|a| OutputColumn {
        name: "agg".into(),
        ty: a.ty,
    }));
    Plan::new(
        Node::Aggregate {
            input: Box::new(input.clone()),
            groups,
            sets: Vec::new(),
            aggs,
            bee: None,
        },
        schema,
    )
}

#[test]
fn aggregates_empty_nulls_distinct_and_overflow() {
    let s = store();
    let w = s.begin_write().unwrap();
    let t = table(
        &w,
        "t",
        vec![
            col("g", DataType::Integer, false),
            col("v", DataType::Integer, false),
        ],
        &[],
    );
    let all_aggs = || {
        vec![
            agg(AggFunc::CountStar, None, false, DataType::BigInt),
            agg(AggFunc::Count, Some(int_col(1)), false, DataType::BigInt),
            agg(AggFunc::Sum, Some(int_col(1)), false, DataType::BigInt),
            agg(AggFunc::Avg, Some(int_col(1)), false, DataType::NUMERIC),
            agg(AggFunc::Min, Some(int_col(1)), false, DataType::Integer),
            agg(AggFunc::Max, Some(int_col(1)), false, DataType::Integer),
            agg(AggFunc::Count, Some(int_col(1)), true, DataType::BigInt),
            agg(AggFunc::Sum, Some(int_col(1)), true, DataType::BigInt),
        ]
    };
    let n = Value::Null;
    // no groups, no rows → one row
    assert_eq!(
        rows(&w, &agg_plan(&scan(&t), vec![], all_aggs())),
        vec![vec![
            Value::BigInt(0),
            Value::BigInt(0),
            n.clone(),
            n.clone(),
            n.clone(),
            n.clone(),
            Value::BigInt(0),
            n.clone()
        ]]
    );
    // groups, no rows → nothing
    assert!(rows(&w, &agg_plan(&scan(&t), vec![int_col(0)], all_aggs())).is_empty());
    ints(
        &t,
        &w,
        &[
            &[Some(1), Some(1)],
            &[Some(1), Some(2)],
            &[Some(1), Some(2)],
            &[Some(1), None],
            &[None, Some(7)],
            &[None, None],
        ],
    );
    let got = sorted(rows(&w, &agg_plan(&scan(&t), vec![int_col(0)], all_aggs())));
    let dec = |u, s| Value::Decimal(Decimal::new(u, s).unwrap());
    assert_eq!(
        got,
        sorted(vec![
            vec![
                i(1),
                Value::BigInt(4),
                Value::BigInt(3),
                Value::BigInt(5),
                dec(16666666666666667, 16),
                i(1),
                i(2),
                Value::BigInt(2),
                Value::BigInt(3)
            ],
            vec![
                n.clone(),
                Value::BigInt(2),
                Value::BigInt(1),
                Value::BigInt(7),
                dec(7, 0),
                i(7),
                i(7),
                Value::BigInt(1),
                Value::BigInt(7)
            ],
        ])
    );
    // bigint sum → numeric; overflow of a bigint sum of integers is an error only past i64
    let b = table(&w, "b", vec![col("v", DataType::BigInt, false)], &[]);
    for _ in 0..3 {
        insert_row(&w, &b, &[Value::BigInt(i64::MAX)]).unwrap();
    }
    let sum = rows(
        &w,
        &agg_plan(
            &scan(&b),
            vec![],
            vec![agg(
                AggFunc::Sum,
                Some(Expr::column(0, DataType::BigInt)),
                false,
                DataType::NUMERIC,
            )],
        ),
    );
    assert_eq!(sum, vec![vec![dec(3 * i64::MAX as i128, 0)]]);
}

#[test]
fn sum_of_smallint_as_bigint_and_float_avg() {
    let s = store();
    let w = s.begin_write().unwrap();
    let t = table(
        &w,
        "t",
        vec![
            col("a", DataType::SmallInt, false),
            col("f", DataType::Double, false),
        ],
        &[],
    );
    for k in 1..=4 {
        insert_row(
            &w,
            &t,
            &[Value::SmallInt(k * 1000), Value::Double(k as f64)],
        )
        .unwrap();
    }
    let got = rows(
        &w,
        &agg_plan(
            &scan(&t),
            vec![],
            vec![
                agg(
                    AggFunc::Sum,
                    Some(Expr::column(0, DataType::SmallInt)),
                    false,
                    DataType::BigInt,
                ),
                agg(
                    AggFunc::Avg,
                    Some(Expr::column(1, DataType::Double)),
                    false,
                    DataType::Double,
                ),
            ],
        ),
    );
    assert_eq!(got, vec![vec![Value::BigInt(10000), Value::Double(2.5)]]);
}

fn sort_plan(input: &Plan, keys: Vec<(usize, bool, bool)>) -> Plan {
    let keys = keys
        .into_iter()
        .map(|(c, desc, nulls_first)| SortKey {
            expr: Expr::column(c, input.schema[c].ty),
            desc,
            nulls_first,
        })
        .collect();
    Plan::new(
        Node::Sort {
            input: Box::new(input.clone()),
            keys,
            bee: None,
        },
        input.schema.clone(),
    )
}

fn limit_plan(input: &Plan, limit: Option<u64>, offset: u64) -> Plan {
    Plan::new(
        Node::Limit {
            input: Box::new(input.clone()),
            limit,
            offset,
        },
        input.schema.clone(),
    )
}

#[test]
fn sort_orders_nulls_and_char_padding() {
    let s = store();
    let w = s.begin_write().unwrap();
    let t = table(
        &w,
        "t",
        vec![
            col("a", DataType::Integer, false),
            col("c", DataType::Char(3), false),
            col("f", DataType::Double, false),
        ],
        &[],
    );
    let rowv = |a: Option<i32>, c: &str, f: f64| {
        vec![
            a.map_or(Value::Null, Value::Integer),
            Value::Char(c.into()),
            Value::Double(f),
        ]
    };
    for r in [
        rowv(Some(2), "b  ", f64::NAN),
        rowv(None, "a  ", 1.0),
        rowv(Some(1), "a\u{1}", -1.0),
        rowv(Some(3), "ab ", f64::INFINITY),
    ] {
        insert_row(&w, &t, &r).unwrap();
    }
    let col0 = |p: Plan| {
        rows(&w, &p)
            .into_iter()
            .map(|r| r[0].clone())
            .collect::<Vec<_>>()
    };
    let n = Value::Null;
    assert_eq!(
        col0(sort_plan(&scan(&t), vec![(0, false, false)])),
        vec![i(1), i(2), i(3), n.clone()]
    );
    assert_eq!(
        col0(sort_plan(&scan(&t), vec![(0, false, true)])),
        vec![n.clone(), i(1), i(2), i(3)]
    );
    assert_eq!(
        col0(sort_plan(&scan(&t), vec![(0, true, true)])),
        vec![n.clone(), i(3), i(2), i(1)]
    );
    assert_eq!(
        col0(sort_plan(&scan(&t), vec![(0, true, false)])),
        vec![i(3), i(2), i(1), n.clone()]
    );
    // char(n): "a" (padded) < "a\x01" < "ab" < "b"
    assert_eq!(
        col0(sort_plan(&scan(&t), vec![(1, false, false)])),
        vec![n.clone(), i(1), i(3), i(2)]
    );
    // floats: NaN last
    assert_eq!(
        col0(sort_plan(&scan(&t), vec![(2, false, false)])),
        vec![i(1), n.clone(), i(3), i(2)]
    );
}

#[test]
fn top_n_and_limit_offset_stop_early() {
    let s = store();
    let w = s.begin_write().unwrap();
    let t = table(&w, "t", vec![col("a", DataType::Integer, false)], &[]);
    for k in (0..5000).rev() {
        insert_row(&w, &t, &[i(k)]).unwrap();
    }
    let got = rows(
        &w,
        &limit_plan(&sort_plan(&scan(&t), vec![(0, false, false)]), Some(3), 2),
    );
    assert_eq!(got, vec![vec![i(2)], vec![i(3)], vec![i(4)]]);
    let got = rows(&w, &limit_plan(&scan(&t), Some(2), 1030));
    assert_eq!(got, vec![vec![i(5000 - 1031)], vec![i(5000 - 1032)]]);
    assert!(rows(&w, &limit_plan(&scan(&t), Some(0), 0)).is_empty());
    assert_eq!(rows(&w, &limit_plan(&scan(&t), None, 4990)).len(), 10);
    // the scan stops early: the profile shows one batch out of the scan
    let profile = Profile::new();
    let mut c = ctx(&w, &[]);
    c.profile = Some(&profile);
    let p = limit_plan(&scan(&t), Some(5), 0);
    assert_eq!(collect(&p, &c).unwrap().len(), 5);
    assert_eq!(profile.node(1).unwrap().batches, 1);
    assert_eq!(profile.node(0).unwrap().rows, 5);
    let lines = crate::plan::explain::explain(&p, Some(&profile));
    assert!(
        lines[0].starts_with("Limit (actual time=") && lines[0].ends_with(" rows=5 loops=1)") && lines[1] == "  Limit: 5",
        "{lines:?}"
    );
    // One batch: at most BATCH_SIZE rows (fewer when a page would not fit).
    let scanned: usize = lines[2]
        .strip_prefix("  ->  Seq Scan on t (actual time=")
        .and_then(|r| r.split(" rows=").nth(1))
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(scanned > BATCH_SIZE / 2 && scanned <= BATCH_SIZE, "{lines:?}");
}

fn setop(op: SetOpKind, all: bool, l: &Plan, r: &Plan) -> Plan {
    Plan::new(
        Node::SetOp {
            op,
            all,
            left: Box::new(l.clone()),
            right: Box::new(r.clone()),
        },
        l.schema.clone(),
    )
}

#[test]
fn set_ops_and_distinct() {
    let s = store();
    let w = s.begin_write().unwrap();
    let l = table(&w, "l", vec![col("a", DataType::Integer, false)], &[]);
    let r = table(&w, "r", vec![col("a", DataType::Integer, false)], &[]);
    ints(
        &l,
        &w,
        &[
            &[Some(1)],
            &[Some(1)],
            &[Some(1)],
            &[Some(2)],
            &[None],
            &[None],
        ],
    );
    ints(&r, &w, &[&[Some(1)], &[Some(1)], &[Some(3)], &[None]]);
    let (lp, rp) = (scan(&l), scan(&r));
    let vals = |p: Plan| {
        let mut v: Vec<Option<i32>> = rows(&w, &p)
            .into_iter()
            .map(|r| match r[0] {
                Value::Integer(x) => Some(x),
                _ => None,
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        vals(setop(SetOpKind::Union, false, &lp, &rp)),
        vec![None, Some(1), Some(2), Some(3)]
    );
    assert_eq!(vals(setop(SetOpKind::Union, true, &lp, &rp)).len(), 10);
    assert_eq!(
        vals(setop(SetOpKind::Intersect, false, &lp, &rp)),
        vec![None, Some(1)]
    );
    assert_eq!(
        vals(setop(SetOpKind::Intersect, true, &lp, &rp)),
        vec![None, Some(1), Some(1)]
    );
    assert_eq!(
        vals(setop(SetOpKind::Except, false, &lp, &rp)),
        vec![Some(2)]
    );
    assert_eq!(
        vals(setop(SetOpKind::Except, true, &lp, &rp)),
        vec![None, Some(1), Some(2)]
    );
    let d = Plan::new(
        Node::Distinct {
            input: Box::new(lp.clone()),
        },
        lp.schema.clone(),
    );
    assert_eq!(vals(d), vec![None, Some(1), Some(2)]);
}

#[test]
fn distinct_normalizes_decimals_char_and_floats() {
    let s = store();
    let w = s.begin_write().unwrap();
    let t = table(
        &w,
        "t",
        vec![
            col("d", DataType::NUMERIC, false),
            col("c", DataType::Char(4), false),
            col("f", DataType::Double, false),
        ],
        &[],
    );
    let r = |u, sc, c: &str, f| {
        vec![
            Value::Decimal(Decimal::new(u, sc).unwrap()),
            Value::Char(c.into()),
            Value::Double(f),
        ]
    };
    for row in [
        r(1, 0, "a   ", 0.0),
        r(10, 1, "a   ", -0.0),
        r(100, 2, "a   ", 0.0),
        r(1, 0, "a   ", f64::NAN),
        r(1, 0, "a   ", -f64::NAN),
    ] {
        insert_row(&w, &t, &row).unwrap();
    }
    let p = scan(&t);
    let d = Plan::new(
        Node::Distinct {
            input: Box::new(p.clone()),
        },
        p.schema.clone(),
    );
    assert_eq!(rows(&w, &d).len(), 2);
}

#[test]
fn values_and_memory_limit() {
    let s = store();
    let w = s.begin_write().unwrap();
    let v = Plan::new(
        Node::Values {
            rows: vec![
                vec![
                    lit(1),
                    Expr::literal(Value::Text("a".into()), DataType::Text),
                ],
                vec![lit(2), Expr::literal(Value::Null, DataType::Text)],
            ],
        },
        vec![
            OutputColumn {
                name: "a".into(),
                ty: DataType::Integer,
            },
            OutputColumn {
                name: "b".into(),
                ty: DataType::Text,
            },
        ],
    );
    assert_eq!(
        rows(&w, &v),
        vec![vec![i(1), Value::Text("a".into())], vec![i(2), Value::Null]]
    );
    assert_eq!(rows(&w, &Plan::one_row()), vec![Vec::<Value>::new()]);
    let t = table(&w, "t", vec![col("a", DataType::Integer, false)], &[]);
    for k in 0..20000 {
        insert_row(&w, &t, &[i(k)]).unwrap();
    }
    let mut c = ctx(&w, &[]);
    c.memory_limit = 10_000;
    // A sort past the limit spills its runs to temporary files (sort.rs) instead.
    let sorted = collect(&sort_plan(&scan(&t), vec![(0, true, false)]), &c).unwrap();
    assert_eq!(sorted, (0..20000).rev().map(|k| vec![i(k)]).collect::<Vec<_>>());
    let d = Plan::new(
        Node::Distinct {
            input: Box::new(scan(&t)),
        },
        scan(&t).schema,
    );
    assert!(collect(&d, &c).unwrap_err().message.contains("Distinct"));
    // So do a GROUP BY aggregate and a hash join (spill.rs), splitting their
    // parts again and again at this limit: the answers are whole.
    let a = agg_plan(&scan(&t), vec![int_col(0)], vec![]);
    let mut groups = collect(&a, &c).unwrap();
    groups.sort_by_key(|r| match r[0] {
        Value::Integer(k) => k,
        _ => panic!("{r:?}"),
    });
    assert_eq!(groups, (0..20000).map(|k| vec![i(k)]).collect::<Vec<_>>());
    let j = join_plan(&scan(&t), &scan(&t), JoinKind::Inner, true);
    let mut pairs = collect(&j, &c).unwrap();
    assert_eq!(pairs.len(), 20000);
    pairs.sort_by_key(|r| format!("{:08}", match r[0] { Value::Integer(k) => k, _ => -1 }));
    assert!(pairs.iter().enumerate().all(|(k, r)| r[0] == i(k as i32) && r[1] == r[0]));
}

#[test]
fn subqueries_scalar_exists_values_and_cache() {
    let s = store();
    let w = s.begin_write().unwrap();
    let t = table(&w, "t", vec![col("a", DataType::Integer, false)], &[]);
    ints(&t, &w, &[&[Some(1)], &[Some(2)]]);
    let one = limit_plan(&scan(&t), Some(1), 0);
    let subs = vec![
        Subplan {
            plan: one,
            param_base: 0,
            correlated: false,
        },
        Subplan {
            plan: scan(&t),
            param_base: 0,
            correlated: false,
        },
        Subplan {
            plan: limit_plan(&scan(&t), Some(0), 0),
            param_base: 0,
            correlated: true,
        },
    ];
    let c = ctx(&w, &subs);
    let state = StatementState::default();
    let ex = state.exec(&c, None, None);
    assert_eq!(
        ex.run(0, &SubqueryKind::Scalar, &[]).unwrap(),
        SubqueryResult::Scalar(i(1))
    );
    let e = ex.run(1, &SubqueryKind::Scalar, &[]).unwrap_err();
    assert_eq!(e.sqlstate, "21000");
    assert_eq!(
        ex.run(1, &SubqueryKind::Exists, &[]).unwrap(),
        SubqueryResult::Exists(true)
    );
    assert_eq!(
        ex.run(2, &SubqueryKind::Exists, &[]).unwrap(),
        SubqueryResult::Exists(false)
    );
    assert_eq!(
        ex.run(2, &SubqueryKind::Scalar, &[]).unwrap(),
        SubqueryResult::Scalar(Value::Null)
    );
    let kind = SubqueryKind::In {
        expr: Box::new(lit(1)),
        negated: false,
        rest: vec![],
    };
    assert_eq!(
        ex.run(1, &kind, &[]).unwrap(),
        SubqueryResult::Values(vec![i(1), i(2)])
    );
    assert_eq!(state.cache.borrow().len(), 3);
}

#[test]
fn dml_unique_not_null_update_delete() {
    let s = store();
    let w = s.begin_write().unwrap();
    let t = table(
        &w,
        "t",
        vec![
            col("id", DataType::Integer, true),
            col("u", DataType::Char(4), false),
        ],
        &[("t_pkey", vec![0], true), ("t_u_key", vec![1], true)],
    );
    let row =
        |id: i32, u: Option<&str>| vec![i(id), u.map_or(Value::Null, |s| Value::Char(s.into()))];
    let t1 = insert_row(&w, &t, &row(1, Some("a   "))).unwrap();
    insert_row(&w, &t, &row(2, None)).unwrap();
    insert_row(&w, &t, &row(3, None)).unwrap(); // NULLs may repeat in a unique index
    let e = insert_row(&w, &t, &row(1, Some("b   "))).unwrap_err();
    assert_eq!(
        (e.sqlstate, e.message.as_str()),
        (
            "23505",
            "duplicate key value violates unique constraint \"t_pkey\""
        )
    );
    let e = insert_row(&w, &t, &row(4, Some("a"))).unwrap_err(); // char padding ignored
    assert!(e.message.contains("t_u_key"));
    let e = insert_row(&w, &t, &[Value::Null, Value::Null]).unwrap_err();
    assert_eq!(
        (e.sqlstate, e.message.as_str()),
        (
            "23502",
            "null value in column \"id\" of relation \"t\" violates not-null constraint"
        )
    );
    // the failed inserts left nothing behind
    assert_eq!(rows(&w, &scan(&t)).len(), 3);
    // update: own key is fine, another row's key is not
    let t1b = update_row(&w, &t, t1, &row(1, Some("a   ")), &row(1, Some("z   "))).unwrap();
    let e = update_row(&w, &t, t1b, &row(1, Some("z   ")), &row(2, Some("z   "))).unwrap_err();
    assert_eq!(e.sqlstate, "23505");
    let t1c = update_row(&w, &t, t1b, &row(1, Some("z   ")), &row(10, Some("z   "))).unwrap();
    let got = rows(&w, &index_scan(&t, 0, vec![lit(10)], None, None));
    assert_eq!(got, vec![row(10, Some("z   "))]);
    assert!(rows(&w, &index_scan(&t, 0, vec![lit(1)], None, None)).is_empty());
    // a long value moves the tuple; the index follows
    let long = "x".repeat(3000);
    let t1d = update_row(
        &w,
        &t,
        t1c,
        &row(10, Some("z   ")),
        &[i(10), Value::Char(long.clone())],
    );
    assert!(
        t1d.is_err(),
        "char(4) would not hold it; the binder casts first"
    );
    delete_row(&w, &t, t1c, &row(10, Some("z   "))).unwrap();
    assert!(rows(&w, &index_scan(&t, 0, vec![lit(10)], None, None)).is_empty());
    assert_eq!(rows(&w, &scan(&t)).len(), 2);
    insert_row(&w, &t, &row(1, Some("z   "))).unwrap();
}

#[test]
fn create_index_entries_checks_uniqueness() {
    let s = store();
    let w = s.begin_write().unwrap();
    let mut def = (*table(&w, "t", vec![col("a", DataType::Integer, false)], &[])).clone();
    ints(
        &def,
        &w,
        &[&[Some(1)], &[Some(2)], &[None], &[None], &[Some(2)]],
    );
    def.indexes.push(IndexDef {
        name: "t_a".into(),
        columns: vec![0],
        unique: false,
        primary: false,
        root: create_btree(&w).unwrap(),
        clustered: false,
    });
    create_index_entries(&w, &def, 0, 1 << 20, &crate::exec::interrupt::Interrupt::never()).unwrap();
    let t = Arc::new(def.clone());
    assert_eq!(
        rows(&w, &index_scan(&t, 0, vec![lit(2)], None, None)).len(),
        2
    );
    def.indexes.push(IndexDef {
        name: "t_a_u".into(),
        columns: vec![0],
        unique: true,
        primary: false,
        root: create_btree(&w).unwrap(),
        clustered: false,
    });
    let e = create_index_entries(&w, &def, 1, 1 << 20, &crate::exec::interrupt::Interrupt::never()).unwrap_err();
    assert_eq!(e.sqlstate, "23505");
    assert!(
        e.message
            .starts_with("could not create unique index \"t_a_u\""),
        "{}",
        e.message
    );
    // index keys of the unconstrained numeric are rescaled; too many digits is an error
    let n = table(
        &w,
        "n",
        vec![col("d", DataType::NUMERIC, false)],
        &[("n_d", vec![0], false)],
    );
    let big = Value::Decimal(Decimal::new(10i128.pow(30), 0).unwrap());
    assert!(index_key(&n, &n.indexes[0], &[big]).is_err());
}

#[test]
fn filter_with_real_predicate() {
    let s = store();
    let w = s.begin_write().unwrap();
    let t = table(&w, "t", vec![col("a", DataType::Integer, false)], &[]);
    ints(&t, &w, &[&[Some(1)], &[Some(5)]]);
    let pred = Expr::new(
        crate::expr::ExprKind::Compare {
            op: crate::expr::CmpOp::Gt,
            left: Box::new(int_col(0)),
            right: Box::new(lit(2)),
        },
        DataType::Boolean,
    );
    let p = Plan::new(
        Node::Filter {
            input: Box::new(scan(&t)),
            predicate: pred,
        },
        scan(&t).schema,
    );
    assert_eq!(rows(&w, &p), vec![vec![i(5)]]);
}

#[test]
fn update_that_moves_the_tuple_keeps_indexes() {
    let s = store();
    let w = s.begin_write().unwrap();
    let t = table(
        &w,
        "t",
        vec![
            col("id", DataType::Integer, true),
            col("s", DataType::Text, false),
        ],
        &[("t_pkey", vec![0], true)],
    );
    let mut tids = Vec::new();
    for k in 0..40 {
        tids.push(insert_row(&w, &t, &[i(k), Value::Text("y".repeat(150))]).unwrap());
    }
    let old = vec![i(0), Value::Text("y".repeat(150))];
    let new = vec![i(0), Value::Text("z".repeat(1900))];
    let moved = update_row(&w, &t, tids[0], &old, &new).unwrap();
    assert_ne!(moved, tids[0]);
    assert_eq!(
        rows(&w, &index_scan(&t, 0, vec![lit(0)], None, None)),
        vec![new.clone()]
    );
    assert_eq!(rows(&w, &scan(&t)).len(), 40);
    let e = insert_row(&w, &t, &[i(0), Value::Null]).unwrap_err();
    assert_eq!(e.sqlstate, "23505");
    delete_row(&w, &t, moved, &new).unwrap();
    insert_row(&w, &t, &[i(0), Value::Null]).unwrap();
}

#[test]
fn explain_lines() {
    let s = store();
    let w = s.begin_write().unwrap();
    let t = table(
        &w,
        "t",
        vec![col("a", DataType::Integer, false)],
        &[("t_a", vec![0], true)],
    );
    let j = join_plan(
        &scan(&t),
        &index_scan(&t, 0, vec![lit(3)], None, None),
        JoinKind::Left,
        true,
    );
    let a = agg_plan(
        &j,
        vec![int_col(0)],
        vec![agg(AggFunc::CountStar, None, false, DataType::BigInt)],
    );
    let lines = crate::plan::explain::explain(&sort_plan(&a, vec![(0, true, false)]), None);
    assert_eq!(
        lines,
        vec![
            "Sort",
            "  Sort Key: g DESC NULLS LAST",
            "  ->  HashAggregate",
            "        Group Key: a",
            "        Aggregates: count(*)",
            "        ->  Hash Left Join",
            "              Hash Cond: (a = a)",
            "              ->  Seq Scan on t",
            "              ->  Index Scan using t_a on t",
            "                    Index Cond: (a = 3)",
        ]
    );
}
