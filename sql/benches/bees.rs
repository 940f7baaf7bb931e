//! Per-tuple cost of deform, scan and form: each bee (compiled and instantiated)
//! against the SQL engine's generic path doing the same job — decoding stored tuples
//! into the executor's column vectors, filtering them, encoding rows.
//!
//! ```text
//! cargo bench -p beedb-sql --bench bees
//! ```
//!
//! - `deform/orders`: all 9 columns of TPC-H-like `orders` tuples into vectors
//!   (generic: `RowDecoder::decode_into`, which finds each attribute through the
//!   layout; bee: the relation's deform bee, then the same conversions into vectors);
//! - `deform/o_comment`: the case study's one column;
//! - `scan/q6`: TPC-H Q6's predicate over `lineitem` tuples (16 columns), keeping its
//!   4 columns of the ~2% that qualify (generic: decode those 4 columns of every
//!   tuple, then the vectorized evaluator; bee: one scan bee);
//! - `form/lineitem`: encoding rows of values into stored tuples (generic:
//!   `EncodedRow` + the layout's encoder; bee: `RowFormer`);
//! - `sort/int`, `sort/dec_date`, `sort/text`: ordering 1M rows' sort keys (a
//!   bigint; a `numeric(12,2)` DESC then a date; a text of 8–40 bytes sharing
//!   prefixes) — generic: a stable `sort_by` calling `cmp_sort` per key, as ORDER BY
//!   does with `bee_sort` off; bee: the sort bee's normalized keys and their order,
//!   ties by the comparator, as ORDER BY does with it on.
//! - `agg/q1`, `agg/many_groups`: grouping 1M rows in batches of 1024 — Q1-like
//!   (two `char(1)` keys, 4 groups; sums and averages of `numeric(15,2)` and of a
//!   scale-4 product, count(*)) and 100,000 bigint groups (sum of a numeric, avg of an
//!   integer, count(*)) — generic: the executor's GROUP BY state with `bee_agg` off
//!   (packed key table, then one `Acc::update` pass per aggregate); bee: the same
//!   state with the aggregate bee (`exec::agg_bench`); `clone only` is the inputs'
//!   copy both include.
//! - `join/int_100k`, `join/int_1m`, `join/int_int_1m`, `join/date_100k`: probing a
//!   hash join's key table (built from 100k or 1M distinct keys: an integer, a pair
//!   of integers, a date) with 2M probe rows in batches of 1024, half of them
//!   matching, in random order — generic: `KeyTable::find` (pack column at a time,
//!   then probe), as the join does with `bee_join` off; bee: the join bee
//!   (`KeyTable::find_bee`: read, pack, hash and probe fused per row); `join/bigint_1m`:
//!   a bigint key (65 bits with its NULL bit: a u128 table).

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use beedb_bees::abi::{ByteRef, Stop};
use beedb_bees::spec::ScanSpec;
use beedb_bees::{BeeCache, BeeOwner, MakerChoice, ScanBee};
use beedb_sql::bees::form::RowFormer;
use beedb_sql::bees::output::BeeOutput;
use beedb_sql::bees::translate::{self, ScanCols};
use beedb_sql::catalog::{ColumnDef, TableDef};
use beedb_sql::exec::tuple_codec::{EncodedRow, RowDecoder};
use beedb_sql::expr::{CmpOp, EvalContext, Expr, ExprKind, NoSubqueries, eval_predicate};
use beedb_sql::types::{DataType, Date, Decimal, Value};
use beedb_sql::vector::{BATCH_SIZE, Batch, Vector};
use beedb_sql::Database;
use beedb_storage::PageId;

const N: usize = 4096;

fn table(name: &str, cols: &[(&str, DataType)]) -> TableDef {
    let columns = cols
        .iter()
        .map(|(n, t)| ColumnDef {
            name: n.to_string(),
            ty: *t,
            not_null: true,
            default: None,
        })
        .collect();
    TableDef::new(1, name.into(), columns, PageId(1), vec![]).unwrap()
}

fn dec(p: u8, s: u8) -> DataType {
    DataType::Decimal {
        precision: Some(p),
        scale: s,
    }
}

fn text(rng: &mut StdRng, lo: usize, hi: usize) -> String {
    let n = rng.random_range(lo..=hi);
    (0..n).map(|_| rng.random_range(b'a'..=b'z') as char).collect()
}

fn orders() -> (TableDef, Vec<Vec<Value>>) {
    let t = table(
        "orders",
        &[
            ("o_orderkey", DataType::Integer),
            ("o_custkey", DataType::Integer),
            ("o_orderstatus", DataType::Char(1)),
            ("o_totalprice", dec(15, 2)),
            ("o_orderdate", DataType::Date),
            ("o_orderpriority", DataType::Char(15)),
            ("o_clerk", DataType::Char(15)),
            ("o_shippriority", DataType::Integer),
            ("o_comment", DataType::Varchar(Some(79))),
        ],
    );
    let mut rng = StdRng::seed_from_u64(1);
    let rows = (0..N)
        .map(|i| {
            vec![
                Value::Integer(i as i32),
                Value::Integer(rng.random_range(1..150_000)),
                Value::Char("O".into()),
                Value::Decimal(Decimal::new(rng.random_range(100_000..50_000_000), 2).unwrap()),
                Value::Date(Date(rng.random_range(-2500..-200))),
                Value::Char(format!("{:<15}", "1-URGENT")),
                Value::Char(format!("Clerk#{:09}", rng.random_range(1..1000))),
                Value::Integer(0),
                Value::Varchar(text(&mut rng, 19, 78)),
            ]
        })
        .collect();
    (t, rows)
}

fn lineitem() -> (TableDef, Vec<Vec<Value>>) {
    let t = table(
        "lineitem",
        &[
            ("l_orderkey", DataType::Integer),
            ("l_partkey", DataType::Integer),
            ("l_suppkey", DataType::Integer),
            ("l_linenumber", DataType::Integer),
            ("l_quantity", dec(15, 2)),
            ("l_extendedprice", dec(15, 2)),
            ("l_discount", dec(15, 2)),
            ("l_tax", dec(15, 2)),
            ("l_returnflag", DataType::Char(1)),
            ("l_linestatus", DataType::Char(1)),
            ("l_shipdate", DataType::Date),
            ("l_commitdate", DataType::Date),
            ("l_receiptdate", DataType::Date),
            ("l_shipinstruct", DataType::Char(25)),
            ("l_shipmode", DataType::Char(10)),
            ("l_comment", DataType::Varchar(Some(44))),
        ],
    );
    let mut rng = StdRng::seed_from_u64(2);
    let d = |u: i128| Value::Decimal(Decimal::new(u, 2).unwrap());
    let rows = (0..N)
        .map(|i| {
            let ship = rng.random_range(-2900..-300);
            vec![
                Value::Integer(i as i32 / 4),
                Value::Integer(rng.random_range(1..200_000)),
                Value::Integer(rng.random_range(1..10_000)),
                Value::Integer(i as i32 % 7 + 1),
                d(rng.random_range(1..=50) * 100),
                d(rng.random_range(90_000..10_000_000)),
                d(rng.random_range(0..=10)),
                d(rng.random_range(0..=8)),
                Value::Char("N".into()),
                Value::Char("O".into()),
                Value::Date(Date(ship)),
                Value::Date(Date(ship + 30)),
                Value::Date(Date(ship + 40)),
                Value::Char(format!("{:<25}", "DELIVER IN PERSON")),
                Value::Char(format!("{:<10}", "TRUCK")),
                Value::Varchar(text(&mut rng, 10, 43)),
            ]
        })
        .collect();
    (t, rows)
}

/// Stored tuples of `rows`, back to back, each 8-aligned (as a scan copies a page).
fn stored(t: &TableDef, rows: &[Vec<Value>]) -> (Vec<u8>, Vec<(usize, usize)>) {
    let mut buf = Vec::new();
    let mut spans = Vec::new();
    for r in rows {
        let enc = EncodedRow::encode(t, r).unwrap();
        let tuple = t.layout.encode(&enc.attrs()).unwrap();
        buf.resize(buf.len().next_multiple_of(8), 0);
        spans.push((buf.len(), buf.len() + tuple.len()));
        buf.extend_from_slice(&tuple);
    }
    (buf, spans)
}

fn makers() -> [(&'static str, MakerChoice); 2] {
    [("compiled", MakerChoice::Compiled), ("instantiated", MakerChoice::Instantiated)]
}

/// Runs a bee over every tuple into vectors of `columns`, a batch at a time, as the
/// executor does; returns the rows produced.
fn bee_into_vectors(
    bee: &ScanBee,
    t: &TableDef,
    columns: &[usize],
    refs: &[ByteRef],
    deform: bool,
    var_limit: usize,
) -> usize {
    let types: Vec<_> = columns.iter().map(|&c| (t.columns[c].ty, false)).collect();
    let mut out = BeeOutput::new(&types, BATCH_SIZE);
    let mut sel = vec![0u32; BATCH_SIZE];
    let mut total = 0;
    let mut start = 0;
    let mut cols: Vec<Vector> = types.iter().map(|(ty, _)| Vector::new(*ty, BATCH_SIZE)).collect();
    while start < refs.len() {
        let row0 = cols[0].len();
        let outs = out.column_outs(&mut cols);
        let outs = if deform {
            let mut all = vec![beedb_bees::abi::ColumnOut::SKIP; t.columns.len()];
            for (k, &c) in columns.iter().enumerate() {
                all[c] = outs[k];
            }
            all
        } else {
            outs
        };
        let end = (start + 128).min(refs.len()); // a page's worth per call
        // SAFETY: refs point into a live buffer; outs come from `column_outs`.
        let p = unsafe { bee.run(&refs[start..end], &outs, row0, BATCH_SIZE - row0, &mut sel, var_limit) };
        unsafe { out.commit(&mut cols, row0, p.produced).unwrap() };
        assert_ne!(p.stop, Stop::Fallback);
        start += p.consumed;
        if cols[0].len() == BATCH_SIZE || start == refs.len() {
            total += cols[0].len();
            black_box(&cols);
            cols = types.iter().map(|(ty, _)| Vector::new(*ty, BATCH_SIZE)).collect();
        }
    }
    total
}

fn generic_decode(db: &Database, t: &TableDef, columns: &[usize], buf: &[u8], spans: &[(usize, usize)]) -> Vec<Vec<Vector>> {
    let r = db.store().begin_read();
    let dec = RowDecoder::new(t, columns);
    let mut batches = Vec::new();
    let mut cols = dec.new_vectors(BATCH_SIZE);
    for &(s, e) in spans {
        dec.decode_into(&r, t, &buf[s..e], &mut cols).unwrap();
        if cols[0].len() == BATCH_SIZE {
            batches.push(std::mem::replace(&mut cols, dec.new_vectors(BATCH_SIZE)));
        }
    }
    batches.push(cols);
    batches
}

fn deform(c: &mut Criterion) {
    let db = Database::open(":memory:").unwrap();
    let cache = Arc::new(BeeCache::new());
    let (t, rows) = orders();
    let (buf, spans) = stored(&t, &rows);
    let refs: Vec<ByteRef> = spans.iter().map(|&(s, e)| ByteRef::of(&buf[s..e])).collect();
    for (label, columns) in [("orders", (0..9).collect::<Vec<_>>()), ("o_comment", vec![8])] {
        let mut g = c.benchmark_group(format!("deform/{label}"));
        g.throughput(Throughput::Elements(N as u64));
        g.bench_function("generic", |b| b.iter(|| black_box(generic_decode(&db, &t, &columns, &buf, &spans))));
        for (name, choice) in makers() {
            let rel = cache.relation(1, "orders", translate::relation_spec(&t), 0, choice).unwrap();
            let var_limit = beedb_bees::generic::var_walk_len(&rel.spec, columns.iter().copied());
            g.bench_function(name, |b| {
                b.iter(|| black_box(bee_into_vectors(&rel.deform, &t, &columns, &refs, true, var_limit)))
            });
        }
        g.finish();
    }
}

fn col(i: usize, ty: DataType) -> Expr {
    Expr::column(i, ty)
}

fn cmp(op: CmpOp, l: Expr, r: Expr) -> Expr {
    Expr::new(
        ExprKind::Compare {
            op,
            left: Box::new(l),
            right: Box::new(r),
        },
        DataType::Boolean,
    )
}

fn scan(c: &mut Criterion) {
    let db = Database::open(":memory:").unwrap();
    let cache = Arc::new(BeeCache::new());
    let (t, rows) = lineitem();
    let (buf, spans) = stored(&t, &rows);
    let refs: Vec<ByteRef> = spans.iter().map(|&(s, e)| ByteRef::of(&buf[s..e])).collect();
    // Scan columns: l_quantity, l_extendedprice, l_discount, l_shipdate.
    let columns = vec![4, 5, 6, 10];
    let d2 = dec(15, 2);
    let lit = |u: i128| Expr::literal(Value::Decimal(Decimal::new(u, 2).unwrap()), d2);
    let date = |d: i32| Expr::literal(Value::Date(Date(d)), DataType::Date);
    // Q6: shipdate in one year, discount between 0.05 and 0.07, quantity < 24.
    let pred = Expr::new(
        ExprKind::And(vec![
            cmp(CmpOp::GtEq, col(3, DataType::Date), date(-2191)),
            cmp(CmpOp::Lt, col(3, DataType::Date), date(-1826)),
            cmp(CmpOp::GtEq, col(2, d2), lit(5)),
            cmp(CmpOp::LtEq, col(2, d2), lit(7)),
            cmp(CmpOp::Lt, col(0, d2), lit(2400)),
        ]),
        DataType::Boolean,
    );
    let params: Vec<Value> = vec![];
    let ctx = EvalContext {
        params: &params,
        subqueries: &NoSubqueries,
    };
    let generic = || {
        let mut kept = 0;
        for cols in generic_decode(&db, &t, &columns, &buf, &spans) {
            let n = cols[0].len();
            let b = Batch::new(cols, n);
            kept += eval_predicate(&pred, &b, &ctx).unwrap().len();
        }
        kept
    };
    let expected = generic();
    let sc = ScanCols {
        table: &t,
        columns: &columns,
        params: &params,
    };
    let bee_pred = translate::translate(&pred, &sc).expect("Q6's predicate is expressible");
    let mut g = c.benchmark_group("scan/q6");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("generic", |b| b.iter(|| black_box(generic())));
    for (name, choice) in makers() {
        let rel = cache.relation(2, "lineitem", translate::relation_spec(&t), 0, choice).unwrap();
        let spec = ScanSpec {
            relation: rel.spec.clone(),
            predicate: Some(bee_pred.clone()),
            outputs: columns.clone(),
        };
        let bee = cache.scan(spec, BeeOwner::Query, 0, choice).unwrap();
        assert_eq!(bee_into_vectors(&bee, &t, &columns, &refs, false, 0), expected, "{name}");
        g.bench_function(name, |b| b.iter(|| black_box(bee_into_vectors(&bee, &t, &columns, &refs, false, 0))));
    }
    g.finish();
    eprintln!("scan/q6: {expected} of {N} tuples qualify");
}

fn form(c: &mut Criterion) {
    let cache = Arc::new(BeeCache::new());
    let (t, rows) = lineitem();
    let mut g = c.benchmark_group("form/lineitem");
    g.throughput(Throughput::Elements(N as u64));
    let mut tuple = Vec::new();
    g.bench_function("generic", |b| {
        b.iter(|| {
            let mut bytes = 0;
            for r in &rows {
                let enc = EncodedRow::encode(&t, r).unwrap();
                t.layout.encode_into(&enc.attrs(), &mut tuple).unwrap();
                bytes += tuple.len();
            }
            black_box(bytes)
        })
    });
    for (name, choice) in makers() {
        let rel = cache.relation(3, "lineitem", translate::relation_spec(&t), 0, choice).unwrap();
        let mut former = RowFormer::new(rel.form.clone());
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut bytes = 0;
                for r in &rows {
                    bytes += former.form(&t, r, 8192).unwrap().unwrap().len();
                }
                black_box(bytes)
            })
        });
    }
    g.finish();
}

/// Rows of the sort benchmarks.
const SORT_ROWS: usize = 1_000_000;

fn sort(c: &mut Criterion) {
    use beedb_sql::exec::keys::cmp_sort;
    use beedb_sql::plan::SortKey;
    let mut rng = StdRng::seed_from_u64(12);
    let n = SORT_ROWS;
    let mut int = Vector::new(DataType::BigInt, n);
    let mut price = Vector::new(dec(12, 2), n);
    let mut day = Vector::new(DataType::Date, n);
    let mut txt = Vector::new(DataType::Text, n);
    let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"];
    for _ in 0..n {
        int.push_value(&Value::BigInt(rng.random_range(-1_000_000_000..1_000_000_000)));
        price.push_value(&Value::Decimal(Decimal::new(rng.random_range(90_000..10_500_000), 2).unwrap()));
        day.push_value(&Value::Date(Date(rng.random_range(0..2500))));
        let w: Vec<&str> = (0..rng.random_range(1..5)).map(|_| words[rng.random_range(0..words.len())]).collect();
        txt.push_value(&Value::Text(format!("{} {}", w.join(" "), rng.random_range(0..1000))));
    }
    let key = |c: usize, ty: DataType, desc: bool| SortKey { expr: col(c, ty), desc, nulls_first: desc };
    let cases: Vec<(&str, Vec<Vector>, Vec<SortKey>)> = vec![
        ("int", vec![int], vec![key(0, DataType::BigInt, false)]),
        ("dec_date", vec![price, day], vec![key(0, dec(12, 2), true), key(1, DataType::Date, false)]),
        ("text", vec![txt], vec![key(0, DataType::Text, false)]),
    ];
    let cache = BeeCache::new();
    for (name, cols, keys) in &cases {
        let mut g = c.benchmark_group(format!("sort/{name}"));
        g.sample_size(10);
        g.throughput(Throughput::Elements(n as u64));
        let cmp_rows = |a: u32, b: u32| {
            for (k, sk) in cols.iter().zip(keys) {
                let o = cmp_sort(k, a as usize, k, b as usize, sk.desc, sk.nulls_first);
                if o != std::cmp::Ordering::Equal {
                    return o;
                }
            }
            std::cmp::Ordering::Equal
        };
        g.bench_function("generic", |b| {
            b.iter(|| {
                let mut perm: Vec<u32> = (0..n as u32).collect();
                perm.sort_by(|&a, &b| cmp_rows(a, b));
                black_box(perm)
            })
        });
        let spec = beedb_sql::bees::sort::spec(keys).unwrap();
        let mut want = None;
        for (maker, choice) in makers() {
            let bee = cache.sort(spec.clone(), BeeOwner::Query, n as u64, choice).unwrap();
            // The same order as the comparator's.
            let perm = bee.order(&beedb_sql::bees::sort::encode(&bee, cols, n).unwrap(), n, cmp_rows);
            let w = want.get_or_insert_with(|| {
                let mut p: Vec<u32> = (0..n as u32).collect();
                p.sort_by(|&a, &b| cmp_rows(a, b));
                p
            });
            assert!(perm == *w, "{maker}");
            g.bench_function(maker, |b| {
                b.iter(|| {
                    let k = beedb_sql::bees::sort::encode(&bee, cols, n).unwrap();
                    black_box(bee.order(&k, n, cmp_rows))
                })
            });
            g.bench_function(format!("{maker} encode only"), |b| b.iter(|| black_box(beedb_sql::bees::sort::encode(&bee, cols, n).unwrap())));
        }
        g.finish();
    }
}

const AGG_ROWS: usize = 1_000_000;

fn agg(c: &mut Criterion) {
    use beedb_sql::exec::agg_bench::BenchGrouping;
    use beedb_sql::plan::{AggCall, AggFunc};
    let mut rng = StdRng::seed_from_u64(1);
    let call = |func: AggFunc, arg: Option<(usize, DataType)>, ty: DataType| AggCall {
        func,
        arg: arg.map(|(i, t)| col(i, t)),
        arg2: None,
        distinct: false,
        order: Vec::new(),
        ty,
        udf: None,
    };
    type Batches = Vec<(Vec<Vector>, Vec<Option<Vector>>)>;
    // Q1-like: returnflag, linestatus; quantity, price, price × (1 − discount).
    let q1 = || -> Batches {
        let mut rng = StdRng::seed_from_u64(2);
        (0..AGG_ROWS.div_ceil(BATCH_SIZE))
            .map(|_| {
                let n = BATCH_SIZE;
                let mut k1 = Vector::new(DataType::Char(1), n);
                let mut k2 = Vector::new(DataType::Char(1), n);
                let mut qty = Vector::new(dec(15, 2), n);
                let mut price = Vector::new(dec(15, 2), n);
                let mut disc = Vector::new(dec(15, 4), n);
                for _ in 0..n {
                    let f = ["A", "N", "R"][rng.random_range(0..3)];
                    k1.push_value(&Value::Text(f.into()));
                    k2.push_value(&Value::Text(if f == "N" && rng.random_bool(0.5) { "F" } else { "O" }.into()));
                    qty.push_value(&Value::Decimal(Decimal::new(rng.random_range(100..5000), 2).unwrap()));
                    price.push_value(&Value::Decimal(Decimal::new(rng.random_range(90_000..10_500_000), 2).unwrap()));
                    disc.push_value(&Value::Decimal(Decimal::new(rng.random_range(90_000..10_500_000) * 95, 4).unwrap()));
                }
                let args = vec![Some(qty.clone()), Some(price.clone()), Some(disc), Some(qty), Some(price), None];
                (vec![k1, k2], args)
            })
            .collect()
    };
    let q1_aggs = vec![
        call(AggFunc::Sum, Some((2, dec(15, 2))), DataType::NUMERIC),
        call(AggFunc::Sum, Some((3, dec(15, 2))), DataType::NUMERIC),
        call(AggFunc::Sum, Some((4, dec(15, 4))), DataType::NUMERIC),
        call(AggFunc::Avg, Some((2, dec(15, 2))), DataType::NUMERIC),
        call(AggFunc::Avg, Some((3, dec(15, 2))), DataType::NUMERIC),
        call(AggFunc::CountStar, None, DataType::BigInt),
    ];
    let mut many = || -> Batches {
        (0..AGG_ROWS.div_ceil(BATCH_SIZE))
            .map(|_| {
                let n = BATCH_SIZE;
                let mut k = Vector::new(DataType::BigInt, n);
                let mut price = Vector::new(dec(15, 2), n);
                let mut qty = Vector::new(DataType::Integer, n);
                for _ in 0..n {
                    k.push_value(&Value::BigInt(rng.random_range(0..100_000) * 7919));
                    price.push_value(&Value::Decimal(Decimal::new(rng.random_range(90_000..10_500_000), 2).unwrap()));
                    qty.push_value(&Value::Integer(rng.random_range(1..50)));
                }
                (vec![k], vec![Some(price), Some(qty), None])
            })
            .collect()
    };
    let many_aggs = vec![
        call(AggFunc::Sum, Some((1, dec(15, 2))), DataType::NUMERIC),
        call(AggFunc::Avg, Some((2, DataType::Integer)), DataType::NUMERIC),
        call(AggFunc::CountStar, None, DataType::BigInt),
    ];
    let cases: Vec<(&str, Vec<DataType>, Vec<AggCall>, Batches)> = vec![
        ("q1", vec![DataType::Char(1), DataType::Char(1)], q1_aggs, q1()),
        ("many_groups", vec![DataType::BigInt], many_aggs, many()),
    ];
    let cache = BeeCache::new();
    for (name, types, aggs, batches) in &cases {
        let run = |bee: Option<Arc<beedb_bees::AggBee>>| {
            let mut g = BenchGrouping::new(types, aggs.clone(), bee).unwrap();
            for (keys, args) in batches {
                g.add(keys[0].len(), keys.clone(), args.clone()).unwrap();
            }
            g
        };
        let groups: Vec<beedb_sql::expr::Expr> = types.iter().enumerate().map(|(i, t)| col(i, *t)).collect();
        let spec = beedb_sql::bees::agg::spec(&groups, &[], aggs).unwrap();
        let want = run(None).finish().unwrap();
        let mut g = c.benchmark_group(format!("agg/{name}"));
        g.sample_size(10);
        g.throughput(Throughput::Elements(AGG_ROWS as u64));
        g.bench_function("clone only", |b| {
            b.iter(|| {
                for (keys, args) in batches {
                    black_box((keys.clone(), args.clone()));
                }
            })
        });
        g.bench_function("generic", |b| b.iter(|| black_box(run(None))));
        for (maker, choice) in makers() {
            let bee = cache.agg(spec.clone(), BeeOwner::Query, AGG_ROWS as u64, choice).unwrap();
            assert!(bee.info().reason.starts_with("bee_maker"), "{maker}: {}", bee.info().reason);
            assert!(run(Some(bee.clone())).finish().unwrap() == want, "{name}: the {maker} bee's answer");
            g.bench_function(maker, |b| b.iter(|| black_box(run(Some(bee.clone())))));
        }
        g.finish();
    }
}

/// Probe rows of the join benchmarks.
const JOIN_PROBE_ROWS: usize = 2_000_000;

fn join(c: &mut Criterion) {
    use beedb_sql::exec::key_table::{KeyTable, ProbeScratch};
    let mut rng = StdRng::seed_from_u64(21);
    let ints = |rng: &mut StdRng, n: usize, range: i32| -> Vector {
        let mut v = Vector::new(DataType::Integer, n);
        for _ in 0..n {
            v.push_value(&Value::Integer(rng.random_range(0..range)));
        }
        v
    };
    let dates = |rng: &mut StdRng, n: usize, range: i32| -> Vector {
        let mut v = Vector::new(DataType::Date, n);
        for _ in 0..n {
            v.push_value(&Value::Date(Date(rng.random_range(0..range))));
        }
        v
    };
    let distinct = |n: usize, ty: DataType| -> Vector {
        let mut v = Vector::new(ty, n);
        for k in 0..n as i32 {
            v.push_value(&if ty == DataType::Date { Value::Date(Date(k)) } else { Value::Integer(k) });
        }
        v
    };
    let pairs = |n: usize| -> Vec<Vector> {
        // n distinct (a, b) pairs: a = k / 4, b = k % 4 * 1000.
        let (mut a, mut b) = (Vector::new(DataType::Integer, n), Vector::new(DataType::Integer, n));
        for k in 0..n as i32 {
            a.push_value(&Value::Integer(k / 4));
            b.push_value(&Value::Integer(k % 4 * 1000));
        }
        vec![a, b]
    };
    let p = JOIN_PROBE_ROWS;
    let cases: Vec<(&str, Vec<Vector>, Vec<Vector>)> = vec![
        ("int_100k", vec![distinct(100_000, DataType::Integer)], vec![ints(&mut rng, p, 200_000)]),
        ("int_1m", vec![distinct(1_000_000, DataType::Integer)], vec![ints(&mut rng, p, 2_000_000)]),
        ("int_int_1m", pairs(1_000_000), {
            let a = ints(&mut rng, p, 250_000);
            let mut b = Vector::new(DataType::Integer, p);
            for _ in 0..p {
                b.push_value(&Value::Integer(rng.random_range(0..8) * 1000));
            }
            vec![a, b]
        }),
        ("date_100k", vec![distinct(100_000, DataType::Date)], vec![dates(&mut rng, p, 200_000)]),
        ("bigint_1m", {
            let mut v = Vector::new(DataType::BigInt, 1_000_000);
            for k in 0..1_000_000i64 {
                v.push_value(&Value::BigInt(k * 3));
            }
            vec![v]
        }, {
            let mut v = Vector::new(DataType::BigInt, p);
            for _ in 0..p {
                v.push_value(&Value::BigInt(rng.random_range(0..2_000_000i64) * 3 / 2));
            }
            vec![v]
        }),
    ];
    let cache = BeeCache::new();
    for (name, build, probe) in &cases {
        let types: Vec<DataType> = build.iter().map(|v| v.ty).collect();
        let mut table = KeyTable::new(&types);
        let mut ids = Vec::new();
        table.insert(build, build[0].len(), true, &mut ids);
        // The probe in executor batches.
        let batches: Vec<Vec<Vector>> = (0..p)
            .step_by(BATCH_SIZE)
            .map(|s| {
                let rows: Vec<u32> = (s as u32..(s + BATCH_SIZE).min(p) as u32).collect();
                probe.iter().map(|v| v.gather(&rows)).collect()
            })
            .collect();
        let mut g = c.benchmark_group(format!("join/{name}"));
        g.sample_size(10);
        g.throughput(Throughput::Elements(p as u64));
        let mut scratch = ProbeScratch::default();
        let mut generic_ids = Vec::new();
        g.bench_function("generic", |b| {
            b.iter(|| {
                let mut hits = 0usize;
                for cols in &batches {
                    table.find(cols, cols[0].len(), &mut ids, &mut scratch);
                    hits += ids.iter().filter(|&&i| i != u32::MAX).count();
                }
                black_box(hits)
            })
        });
        for cols in &batches {
            table.find(cols, cols[0].len(), &mut ids, &mut scratch);
            generic_ids.extend_from_slice(&ids);
        }
        // The key table's spec, 128-bit keys included (which the engine does not use).
        let spec = beedb_sql::exec::key_table::join_key_spec(&types, &types).unwrap();
        let mut seen = Vec::new();
        for (maker, choice) in makers() {
            let bee = cache.join(spec.clone(), BeeOwner::Query, p as u64, choice).unwrap();
            if seen.contains(&bee.maker()) {
                continue; // no compiled join maker: the cache made it instantiated
            }
            seen.push(bee.maker());
            let mut got = Vec::new();
            for cols in &batches {
                assert!(table.find_bee(&bee, cols, cols[0].len(), &mut ids));
                got.extend_from_slice(&ids);
            }
            assert!(got == generic_ids, "{maker}");
            g.bench_function(format!("{}", bee.maker()), |b| {
                b.iter(|| {
                    let mut hits = 0usize;
                    for cols in &batches {
                        table.find_bee(&bee, cols, cols[0].len(), &mut ids);
                        hits += ids.iter().filter(|&&i| i != u32::MAX).count();
                    }
                    black_box(hits)
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, deform, scan, form, sort, agg, join);
criterion_main!(benches);
