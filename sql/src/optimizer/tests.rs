//! The optimizer's passes on plans of every deep shape (item 7 of issue 11): each must
//! finish on a small thread stack, the passes growing their stack where they recurse.
//! Plans are built directly, as the parser's limits keep SQL input shallower.

use super::{NoStats, Rules, optimize, optimize_query};
use crate::expr::{ArithOp, CmpOp, Expr, ExprKind, SubqueryExpr, SubqueryKind};
use crate::plan::{JoinKind, Node, OutputColumn, Plan, SetOpKind, Subplan, explain};
use crate::types::{DataType, Value};

const DEPTH: usize = 5000;

fn int(v: i32) -> Expr {
    Expr::literal(Value::Integer(v), DataType::Integer)
}

/// One row with one integer column.
fn one() -> Plan {
    Plan::new(
        Node::Values { rows: vec![vec![int(1)]] },
        vec![OutputColumn { name: "x".into(), ty: DataType::Integer }],
    )
}

fn boolean(kind: ExprKind) -> Expr {
    Expr::new(kind, DataType::Boolean)
}

fn x_eq_1() -> Expr {
    boolean(ExprKind::Compare { op: CmpOp::Eq, left: Box::new(Expr::column(0, DataType::Integer)), right: Box::new(int(1)) })
}

fn filter(input: Plan, predicate: Expr) -> Plan {
    let schema = input.schema.clone();
    Plan::new(Node::Filter { input: Box::new(input), predicate }, schema)
}

fn join(left: Plan, right: Plan, on: Option<Expr>) -> Plan {
    Plan::inner_join(left, right, on)
}

/// Optimizes and explains `make()`'s plan on a 2 MB stack, with every rule on and
/// with every rule off.
fn survives(make: fn() -> Plan) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            for rules in all_rules_and_none() {
                let plan = optimize(make(), &rules, &NoStats);
                assert!(plan.est.is_some());
                assert!(!explain::explain(&plan, None).is_empty());
            }
        })
        .expect("thread")
        .join()
        .expect("the optimizer survives");
}

#[test]
fn union_chain() {
    survives(|| {
        let mut p = one();
        for _ in 0..DEPTH {
            let schema = p.schema.clone();
            p = Plan::new(Node::SetOp { op: SetOpKind::Union, all: true, left: Box::new(p), right: Box::new(one()) }, schema);
        }
        p
    });
}

#[test]
fn nested_derived_tables() {
    survives(|| {
        let mut p = one();
        for i in 0..DEPTH {
            p = if i % 2 == 0 {
                let schema = p.schema.clone();
                Plan::new(Node::Project { input: Box::new(p), exprs: vec![Expr::column(0, DataType::Integer)] }, schema)
            } else {
                filter(p, x_eq_1())
            };
        }
        p
    });
}

#[test]
fn join_chain() {
    // Beyond the greedy search's reach (more relations than a bitmask holds).
    survives(|| {
        let mut p = one();
        for _ in 0..DEPTH {
            let n = p.schema.len();
            let on = boolean(ExprKind::Compare {
                op: CmpOp::Eq,
                left: Box::new(Expr::column(n - 1, DataType::Integer)),
                right: Box::new(Expr::column(n, DataType::Integer)),
            });
            // Only the newest columns stay visible, so the schema stays small.
            let j = join(p, one(), Some(on));
            let schema = vec![j.schema[n].clone()];
            p = Plan::new(Node::Project { input: Box::new(j), exprs: vec![Expr::column(n, DataType::Integer)] }, schema);
        }
        p
    });
}

#[test]
fn and_or_chains_and_deep_expressions() {
    survives(|| {
        let mut and = x_eq_1();
        let mut or = x_eq_1();
        let mut arith = Expr::column(0, DataType::Integer);
        let mut not = x_eq_1();
        for _ in 0..DEPTH {
            and = boolean(ExprKind::And(vec![and, x_eq_1()]));
            or = boolean(ExprKind::Or(vec![x_eq_1(), or]));
            arith = Expr::new(ExprKind::Arith { op: ArithOp::Add, left: Box::new(arith), right: Box::new(int(1)) }, DataType::Integer);
            not = boolean(ExprKind::Not(Box::new(not)));
        }
        let big = boolean(ExprKind::Compare { op: CmpOp::Gt, left: Box::new(arith), right: Box::new(int(0)) });
        let p = join(filter(one(), and), filter(one(), or), None);
        filter(filter(p, big), not)
    });
}

/// Every rule on and every rule off, as [`survives`] runs them.
fn all_rules_and_none() -> [Rules; 2] {
    [
        Rules::default(),
        Rules {
            decorrelate: false,
            reduce_outer_joins: false,
            join_order: false,
            filter_pushdown: false,
            index_access: false,
            index_order: false,
            index_join: false,
            build_side: false,
            column_pruning: false,
            magic_set: false,
            semi_pushdown: false,
            simplify: false,
            join_filter: false,
            methods: crate::optimizer::methods::Methods { seqscan: false, indexscan: false, hashjoin: false, nestloop: false },
            threads: 1,
            parallel_min_rows: 0,
        },
    ]
}

#[test]
fn left_join_chain_under_a_rejecting_filter() {
    // Outer-join reduction walks the whole chain, turning each join inner.
    survives(|| {
        let mut p = one();
        for _ in 0..DEPTH {
            let n = p.schema.len();
            let on = boolean(ExprKind::Compare {
                op: CmpOp::Eq,
                left: Box::new(Expr::column(n - 1, DataType::Integer)),
                right: Box::new(Expr::column(n, DataType::Integer)),
            });
            let mut j = join(p, one(), Some(on));
            if let Node::Join { kind, .. } = &mut j.node {
                *kind = JoinKind::Left;
            }
            let schema = vec![j.schema[n].clone()];
            p = Plan::new(Node::Project { input: Box::new(j), exprs: vec![Expr::column(n, DataType::Integer)] }, schema);
        }
        filter(p, x_eq_1())
    });
}

#[test]
fn deep_case_expressions() {
    survives(|| {
        let mut case = Expr::column(0, DataType::Integer);
        for i in 0..DEPTH {
            case = Expr::new(ExprKind::Case { whens: vec![(x_eq_1(), case)], else_: Some(Box::new(int(i as i32))) }, DataType::Integer);
        }
        let p = join(one(), one(), None);
        filter(p, boolean(ExprKind::Compare { op: CmpOp::Gt, left: Box::new(case), right: Box::new(int(0)) }))
    });
}

#[test]
fn chains_of_subqueries_through_optimize_query() {
    // Subquery i's plan filters on EXISTS (subquery i + 1): decorrelation turns the
    // chain into nested semi joins, one inside the next, DEPTH deep; the last
    // subquery is a scalar one compared with a column.
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            for rules in all_rules_and_none() {
                let exists = |id: usize| {
                    boolean(ExprKind::Subquery(Box::new(SubqueryExpr { id, kind: SubqueryKind::Exists, correlated: Vec::new() })))
                };
                let mut subplans: Vec<Subplan> = (0..DEPTH)
                    .map(|i| Subplan { plan: filter(one(), exists(i + 1)), param_base: 0, correlated: false })
                    .collect();
                let scalar = Expr::new(
                    ExprKind::Subquery(Box::new(SubqueryExpr { id: DEPTH + 1, kind: SubqueryKind::Scalar, correlated: Vec::new() })),
                    DataType::Integer,
                );
                let last = boolean(ExprKind::Compare { op: CmpOp::Eq, left: Box::new(Expr::column(0, DataType::Integer)), right: Box::new(scalar) });
                subplans.push(Subplan { plan: filter(one(), last), param_base: 0, correlated: false });
                subplans.push(Subplan { plan: one(), param_base: 0, correlated: false });
                let query = optimize_query(filter(one(), exists(0)), subplans, &rules, &NoStats);
                assert!(query.plan.est.is_some());
                assert!(!explain::explain(&query.plan, None).is_empty());
            }
        })
        .expect("thread")
        .join()
        .expect("the optimizer survives");
}

#[test]
fn greedy_join_order_joins_every_relation_once() {
    // Above the dynamic programme's limit, up to a relation set's capacity: every
    // join of the chain must find its equality (a cross product here is what made
    // SQLite's 64-table corpus queries run for hours).
    for n in [20, 64, 100, super::join_order::REORDER_LIMIT] {
        // FROM lists the relations as a cross product; the chain of equalities
        // visits them in a scrambled order, so FROM order would cross them.
        let mut p = one();
        for _ in 1..n {
            p = join(p, one(), None);
        }
        let visit = |i: usize| (i * 7919) % n;
        let eqs = (1..n).map(|i| {
            boolean(ExprKind::Compare {
                op: CmpOp::Eq,
                left: Box::new(Expr::column(visit(i - 1), DataType::Integer)),
                right: Box::new(Expr::column(visit(i), DataType::Integer)),
            })
        });
        let predicate = boolean(ExprKind::And(eqs.collect()));
        let plan = optimize(filter(p, predicate), &Rules::default(), &NoStats);
        assert_eq!(plan.schema.len(), n);
        let text = explain::explain(&plan, None).join("\n");
        assert_eq!(text.matches("Values").count(), n, "{text}");
        assert_eq!(text.matches("Hash Join").count(), n - 1, "{n} relations:\n{text}");
    }
}
