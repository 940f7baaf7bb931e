//! EXPLAIN: a plan as PostgreSQL's text layout — one line per operator, its details
//! on indented lines below it, with the executor's counters under EXPLAIN ANALYZE —
//! or the same tree as JSON (`EXPLAIN (FORMAT JSON)`), for tools.
//!
//! Both layouts render one [`Shown`] tree: [`describe`] says what each node is (a
//! title and keyed details), [`shown`] adds the estimates and counters and decides
//! where a materialized CTE's plan appears; [`text_lines`] and [`json`] only lay it
//! out, so the two formats can never disagree about a plan.

use super::{Access, AggFunc, FrameBound, FrameUnits, JoinKind, Node, Plan, SetOpKind, WindowFunc};
use crate::exec::Profile;
use crate::expr::{Expr, ExprKind, Func};
use crate::types::DataType;

/// The lines of the plan tree. Node ids are pre-order indexes, as the executor's
/// [`Profile`] keys them; with a profile each operator's line ends with
/// `(actual time=T rows=N loops=L)` (T in ms, inclusive of the node's inputs), and a
/// scan that join key filters thinned gets a `Rows Removed by Key Filter: N` line.
pub fn explain(plan: &Plan, profile: Option<&Profile>) -> Vec<String> {
    explain_with(plan, profile, &Options::default())
}

/// What EXPLAIN prints besides the plan's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Each node's estimated cost, rows and row width, `(cost=C rows=R width=W)`
    /// (`EXPLAIN (COSTS OFF)` hides them, as in PostgreSQL, so plan shapes can be
    /// compared as text).
    pub costs: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { costs: true }
    }
}

/// [`explain`] with `options`.
pub fn explain_with(plan: &Plan, profile: Option<&Profile>, options: &Options) -> Vec<String> {
    text(&shown(plan, profile), options)
}

/// The text lines of a [`Shown`] tree.
pub fn text(node: &Shown, options: &Options) -> Vec<String> {
    let mut lines = Vec::new();
    text_lines(node, options, 0, &mut lines);
    lines
}

/// One node as EXPLAIN shows it, with its inputs.
pub struct Shown {
    pub described: Described,
    /// The optimizer's estimates: rows, cost.
    pub est: Option<(f64, f64)>,
    /// The estimated bytes of one output row, from the column types (see [`width`]).
    pub width: u64,
    /// Under EXPLAIN ANALYZE: the node's counters, `None` when it never ran.
    pub actual: Option<Option<crate::exec::NodeProfile>>,
    pub inputs: Vec<Shown>,
}

/// What a node is: the text layout's operator line (`Seq Scan on t`, `Hash Left
/// Join`), the fields JSON gives beside its "Node Type", and its details in order.
pub struct Described {
    pub title: String,
    pub node_type: &'static str,
    pub fields: Vec<(&'static str, Json)>,
    pub details: Vec<Detail>,
}

/// A detail of a node: `Key: text` lines under the operator's line in the text
/// layout (one line per entry of `text`, most details have one), `"Key": json` in
/// JSON. Keys are PostgreSQL's where it has the detail (`Filter`, `Index Cond`,
/// `Hash Cond`, `Sort Key`, `Group Key`, `Join Filter`).
pub struct Detail {
    pub key: &'static str,
    pub text: Vec<String>,
    pub json: Json,
}

impl Detail {
    fn new(key: &'static str, text: String) -> Detail {
        Detail { key, json: Json::Str(text.clone()), text: vec![text] }
    }

    /// A list: joined by `, ` in text, a JSON array.
    fn list(key: &'static str, items: Vec<String>) -> Detail {
        Detail { key, text: vec![items.join(", ")], json: Json::Array(items.into_iter().map(Json::Str).collect()) }
    }

    /// A list shown one item per line in text, a JSON array.
    fn lines(key: &'static str, items: Vec<String>) -> Detail {
        Detail { key, json: Json::Array(items.iter().cloned().map(Json::Str).collect()), text: items }
    }

    fn number(key: &'static str, n: u64) -> Detail {
        Detail { key, text: vec![n.to_string()], json: Json::Int(n) }
    }
}

/// The plan as [`Shown`] nodes. Node ids are pre-order indexes, as the executor's
/// [`Profile`] keys them. Under EXPLAIN ANALYZE a materialized CTE's plan is shown
/// under the reader that ran it (with its counters), else under its first reader;
/// the other readers read its rows.
pub fn shown(plan: &Plan, profile: Option<&Profile>) -> Shown {
    let mut runners = Vec::new();
    if let Some(p) = profile {
        let mut next = 0;
        cte_runners(plan, p, &mut next, &mut runners);
    }
    let mut id = 0;
    let mut ctes_shown = Vec::new();
    build(plan, profile, &mut id, &mut ctes_shown, &runners)
}

/// The materialized CTEs whose plan ran under one of their readers, with that
/// reader's pre-order id.
fn cte_runners(plan: &Plan, profile: &Profile, id: &mut usize, out: &mut Vec<(super::CteId, usize)>) {
    let my_id = *id;
    *id += 1;
    if let Node::CteScan { cte, .. } = &plan.node
        && profile.node(my_id + 1).is_some()
        && !out.iter().any(|(c, _)| c == cte)
    {
        out.push((*cte, my_id));
    }
    for c in plan.children() {
        stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, || cte_runners(c, profile, id, out));
    }
}

fn build(
    plan: &Plan,
    profile: Option<&Profile>,
    id: &mut usize,
    ctes_shown: &mut Vec<(super::CteId, usize)>,
    runners: &[(super::CteId, usize)],
) -> Shown {
    let my_id = *id;
    *id += 1;
    let mut node = Shown {
        described: describe(plan),
        est: plan.est.map(|e| (e.rows.max(1.0), e.cost)),
        width: plan.schema.iter().map(|c| width(c.ty)).sum(),
        actual: profile.map(|p| p.node(my_id)),
        inputs: Vec::new(),
    };
    if let Node::CteScan { cte, plan: inner, .. } = &plan.node {
        let here = match runners.iter().find(|(c, _)| c == cte) {
            Some(&(_, runner)) => runner == my_id,
            None => !ctes_shown.iter().any(|(c, _)| c == cte),
        };
        if !here {
            *id += crate::exec::node_count(inner);
            return node;
        }
        ctes_shown.push((*cte, my_id));
    }
    for c in plan.children() {
        // Deep plans (long UNION chains) recurse on fresh stack segments.
        let input = stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, || build(c, profile, id, ctes_shown, runners));
        node.inputs.push(input);
    }
    node
}

/// The estimated bytes of a value of type `ty`, as PostgreSQL guesses a column's
/// width without statistics (`get_typavgwidth`): a fixed-size type's size, the
/// maximum for a short declared length (`char(n)` always), half of the rest of a
/// longer one (up to 1000 bytes), and 32 for an unconstrained `text` or `numeric`.
/// BeeDB's plan columns do not carry their statistics, so this is the width for
/// every plan, analyzed or not.
pub fn width(ty: DataType) -> u64 {
    let varlena = |max: u64| if max <= 32 { max } else { 32 + (max.min(1000) - 32) / 2 };
    match ty {
        DataType::Boolean => 1,
        DataType::SmallInt => 2,
        DataType::Integer | DataType::Real | DataType::Date => 4,
        DataType::BigInt | DataType::Double | DataType::Timestamp => 8,
        DataType::Interval => 16,
        // PostgreSQL's numeric_maximum_size: a header of 8 bytes and 2 per 4 digits.
        DataType::Decimal { precision: Some(p), .. } => varlena(8 + 2 * ((u64::from(p) + 6) / 4)),
        DataType::Decimal { precision: None, .. } | DataType::Varchar(None) | DataType::Text => 32,
        // Four bytes per character (UTF-8's longest) and a 4-byte length word.
        DataType::Char(n) => 4 * u64::from(n) + 4,
        DataType::Varchar(Some(n)) => varlena(4 * u64::from(n) + 4),
    }
}

/// Appends the text lines of `node`'s subtree, `depth` levels in: the operator's
/// line (`->  ` before it below the root), then its details 6 columns further in
/// than the arrow, as PostgreSQL lays them out.
fn text_lines(node: &Shown, options: &Options, depth: usize, lines: &mut Vec<String>) {
    let mut line = String::new();
    let indent = if depth == 0 { 0 } else { 2 + 6 * (depth - 1) };
    line.push_str(&" ".repeat(indent));
    if depth > 0 {
        line.push_str("->  ");
    }
    line.push_str(&node.described.title);
    if options.costs
        && let Some((rows, cost)) = node.est
    {
        line.push_str(&format!("  (cost={cost:.2} rows={rows:.0} width={})", node.width));
    }
    match &node.actual {
        Some(Some(n)) => line.push_str(&format!(
            " (actual time={:.3} rows={} loops={})",
            n.time.as_secs_f64() * 1000.0,
            n.rows,
            n.loops
        )),
        Some(None) => line.push_str(" (never executed)"),
        None => {}
    }
    lines.push(line);
    let pad = " ".repeat(if depth == 0 { 2 } else { indent + 6 });
    for d in &node.described.details {
        for t in &d.text {
            lines.push(format!("{pad}{}: {t}", d.key));
        }
    }
    if let Some(Some(n)) = &node.actual {
        if n.key_filtered > 0 {
            lines.push(format!("{pad}Rows Removed by Key Filter: {}", n.key_filtered));
        }
        if n.spilled_rows > 0 {
            lines.push(format!("{pad}Spilled: {} rows, {} kB", n.spilled_rows, n.spilled_bytes.div_ceil(1024)));
        }
    }
    for input in &node.inputs {
        stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, || text_lines(input, options, depth + 1, lines));
    }
}

/// A JSON value, as EXPLAIN (FORMAT JSON) writes it: objects keep their keys in
/// the order given (PostgreSQL's order: "Node Type" first, "Plans" last).
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Str(String),
    Int(u64),
    /// A number already written with its decimals (`fixed`).
    Num(String),
    Bool(bool),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// `x` with `decimals` digits after the point (JSON has no NaN or infinity:
    /// those are `null`).
    pub fn fixed(x: f64, decimals: usize) -> Json {
        if x.is_finite() { Json::Num(format!("{x:.decimals$}")) } else { Json::Num("null".into()) }
    }

    /// The value pretty-printed with two-space indents, PostgreSQL's layout.
    pub fn pretty(&self) -> String {
        let mut out = String::new();
        self.write(0, &mut out);
        out
    }

    fn write(&self, indent: usize, out: &mut String) {
        match self {
            Json::Str(s) => crate::types::json::write_json_string(s, out),
            Json::Int(n) => out.push_str(&n.to_string()),
            Json::Num(x) => out.push_str(x),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    out.push_str(&"  ".repeat(indent + 1));
                    stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, || item.write(indent + 1, out));
                }
                if !items.is_empty() {
                    out.push('\n');
                    out.push_str(&"  ".repeat(indent));
                }
                out.push(']');
            }
            Json::Object(fields) => {
                out.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    out.push_str(&"  ".repeat(indent + 1));
                    crate::types::json::write_json_string(k, out);
                    out.push_str(": ");
                    stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, || v.write(indent + 1, out));
                }
                if !fields.is_empty() {
                    out.push('\n');
                    out.push_str(&"  ".repeat(indent));
                }
                out.push('}');
            }
        }
    }
}

/// `node`'s subtree as a JSON object with PostgreSQL's key names where it has
/// them ("Node Type", "Relation Name", "Plan Rows", "Total Cost", "Plan Width", "Actual Rows",
/// "Actual Loops", "Actual Total Time", "Plans").
pub fn json(node: &Shown, options: &Options) -> Json {
    let d = &node.described;
    let mut fields = vec![("Node Type".to_string(), Json::Str(d.node_type.to_string()))];
    fields.extend(d.fields.iter().map(|(k, v)| (k.to_string(), v.clone())));
    fields.extend(d.details.iter().map(|x| (x.key.to_string(), x.json.clone())));
    if options.costs
        && let Some((rows, cost)) = node.est
    {
        fields.push(("Plan Rows".into(), Json::Int(rows.round() as u64)));
        fields.push(("Total Cost".into(), Json::fixed(cost, 2)));
        fields.push(("Plan Width".into(), Json::Int(node.width)));
    }
    match &node.actual {
        Some(Some(n)) => {
            fields.push(("Actual Rows".into(), Json::Int(n.rows)));
            fields.push(("Actual Loops".into(), Json::Int(n.loops)));
            fields.push(("Actual Total Time".into(), Json::fixed(n.time.as_secs_f64() * 1000.0, 3)));
            if n.key_filtered > 0 {
                fields.push(("Rows Removed by Key Filter".into(), Json::Int(n.key_filtered)));
            }
            if n.spilled_rows > 0 {
                fields.push(("Spilled Rows".into(), Json::Int(n.spilled_rows)));
                fields.push(("Spilled kB".into(), Json::Int(n.spilled_bytes.div_ceil(1024))));
            }
        }
        Some(None) => fields.push(("Never Executed".into(), Json::Bool(true))),
        None => {}
    }
    if !node.inputs.is_empty() {
        let plans = node
            .inputs
            .iter()
            .map(|i| stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, || json(i, options)))
            .collect();
        fields.push(("Plans".into(), Json::Array(plans)));
    }
    Json::Object(fields)
}

fn col_name(plan: &Plan, i: usize) -> String {
    plan.schema
        .get(i)
        .map_or_else(|| format!("${i}"), |c| c.name.clone())
}

/// The input columns' names a node's expressions refer to.
fn input_names(plan: &Plan) -> Vec<String> {
    match &plan.node {
        Node::TableScan {
            table,
            columns,
            with_tid,
            ..
        } => {
            let mut v: Vec<String> = columns
                .iter()
                .map(|&c| table.columns[c].name.clone())
                .collect();
            if *with_tid {
                v.push("ctid".into());
            }
            v
        }
        Node::Join { left, right, .. } => {
            let mut v: Vec<String> = (0..left.schema.len()).map(|i| col_name(left, i)).collect();
            v.extend((0..right.schema.len()).map(|i| col_name(right, i)));
            v
        }
        _ => match plan.children().first() {
            Some(c) => (0..c.schema.len()).map(|i| col_name(c, i)).collect(),
            None => Vec::new(),
        },
    }
}

/// Conditions as PostgreSQL writes an `Index Cond` or `Hash Cond`: each in
/// parentheses, several joined by AND in parentheses again.
fn and_text(conds: Vec<String>) -> String {
    let parts: Vec<String> = conds.iter().map(|c| format!("({c})")).collect();
    if parts.len() == 1 { parts.into_iter().next().unwrap_or_default() } else { format!("({})", parts.join(" AND ")) }
}

/// `Bee: <kind>, <maker> (<reason>)`.
fn bee_detail(kind: &str, info: &beedb_bees::BeeInfo) -> Detail {
    Detail::new("Bee", format!("{kind}, {} ({})", info.maker, info.reason))
}

fn sort_key_text(k: &super::SortKey, names: &[String]) -> String {
    let mut s = fmt_expr(&k.expr, names);
    if k.desc {
        s.push_str(" DESC");
    }
    if k.nulls_first != k.desc {
        s.push_str(if k.nulls_first { " NULLS FIRST" } else { " NULLS LAST" });
    }
    s
}

/// What `plan`'s root node is and does (its inputs are not looked at).
pub fn describe(plan: &Plan) -> Described {
    let names = input_names(plan);
    let e = |x: &Expr| fmt_expr(x, &names);
    let list = |xs: &[Expr], names: &[String]| {
        xs.iter()
            .map(|x| fmt_expr(x, names))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let plain = |title: &str, node_type: &'static str| Described {
        title: title.to_string(),
        node_type,
        fields: Vec::new(),
        details: Vec::new(),
    };
    match &plan.node {
        Node::TableScan {
            table,
            filter,
            access,
            bees,
            ..
        } => {
            let mut d = match access {
                Access::Heap => Described {
                    title: format!("Seq Scan on {}", table.name),
                    node_type: "Seq Scan",
                    fields: vec![("Relation Name", Json::Str(table.name.clone()))],
                    details: Vec::new(),
                },
                Access::Index {
                    index,
                    eq,
                    lower,
                    upper,
                    skip_nulls,
                    backward,
                    any,
                } => {
                    let idx = &table.indexes[*index];
                    let dir = if *backward { " Backward" } else { "" };
                    let mut d = Described {
                        title: format!("Index Scan{dir} using {} on {}", idx.name, table.name),
                        node_type: "Index Scan",
                        fields: vec![
                            ("Scan Direction", Json::Str(if *backward { "Backward" } else { "Forward" }.into())),
                            ("Index Name", Json::Str(idx.name.clone())),
                            ("Relation Name", Json::Str(table.name.clone())),
                        ],
                        details: Vec::new(),
                    };
                    let mut conds = Vec::new();
                    for (k, x) in eq.iter().enumerate() {
                        conds.push(format!(
                            "{} = {}",
                            table.columns[idx.columns[k]].name,
                            fmt_expr(x, &[])
                        ));
                    }
                    if let Some(&c) = idx.columns.get(eq.len())
                        && !any.is_empty()
                    {
                        let values: Vec<String> = any.iter().map(|x| fmt_expr(x, &[])).collect();
                        conds.push(format!("{} = ANY ({})", table.columns[c].name, values.join(", ")));
                    } else if let Some(&c) = idx.columns.get(eq.len()) {
                        let name = &table.columns[c].name;
                        if let Some((x, inc)) = lower {
                            conds.push(format!(
                                "{name} {} {}",
                                if *inc { ">=" } else { ">" },
                                fmt_expr(x, &[])
                            ));
                        }
                        if let Some((x, inc)) = upper {
                            conds.push(format!(
                                "{name} {} {}",
                                if *inc { "<=" } else { "<" },
                                fmt_expr(x, &[])
                            ));
                        }
                        if *skip_nulls && lower.is_none() && upper.is_none() {
                            conds.push(format!("{name} IS NOT NULL"));
                        }
                    }
                    if !conds.is_empty() {
                        d.details.push(Detail::new("Index Cond", and_text(conds)));
                    }
                    d
                }
            };
            let mut filter = filter.as_ref();
            if let Some(b) = bees {
                let p = &b.0;
                let (kind, info) = match &p.scan {
                    Some(bee) => ("scan", bee.info()),
                    None => ("deform", p.relation.deform.info()),
                };
                d.details.push(bee_detail(kind, info));
                if let Some(x) = &p.pushed {
                    d.details.push(Detail::new("Bee Filter", e(x)));
                }
                filter = p.residual.as_ref();
            }
            if let Some(f) = filter {
                d.details.push(Detail::new("Filter", e(f)));
            }
            d
        }
        Node::Values { rows } => Described {
            title: format!("Values ({} rows)", rows.len()),
            node_type: "Values Scan",
            fields: vec![("Row Count", Json::Int(rows.len() as u64))],
            details: Vec::new(),
        },
        Node::Filter { predicate, .. } => {
            let mut d = plain("Filter", "Filter");
            d.details.push(Detail::new("Filter", e(predicate)));
            d
        }
        Node::Project { exprs, .. } => {
            let mut d = plain("Project", "Project");
            d.details.push(Detail::list("Output", exprs.iter().map(|x| fmt_expr(x, &names)).collect()));
            d
        }
        Node::Join {
            left,
            right,
            kind,
            on,
            left_keys,
            right_keys,
            method,
        } => {
            let k = match kind {
                JoinKind::Inner => "inner",
                JoinKind::Left => "left",
                JoinKind::Right => "right",
                JoinKind::Full => "full",
                JoinKind::Semi => "semi",
                JoinKind::Anti => "anti",
                JoinKind::Mark => "mark",
            };
            let kind_name = format!("{}{}", k[..1].to_ascii_uppercase(), &k[1..]);
            // PostgreSQL's operator names: `Hash Join`, `Hash Left Join`, `Nested
            // Loop`, `Nested Loop Semi Join` (BeeDB adds the mark join).
            let join_type = |node_type: &'static str| Described {
                title: match (kind, node_type) {
                    (JoinKind::Inner, _) => node_type.to_string(),
                    (_, "Hash Join") => format!("Hash {kind_name} Join"),
                    _ => format!("{node_type} {kind_name} Join"),
                },
                node_type,
                fields: vec![("Join Type", Json::Str(kind_name.clone()))],
                details: Vec::new(),
            };
            let mut d = if left_keys.is_empty() || *method == super::JoinMethod::NestedLoop {
                join_type("Nested Loop")
            } else {
                let ln: Vec<String> = (0..left.schema.len()).map(|i| col_name(left, i)).collect();
                let rn: Vec<String> = (0..right.schema.len())
                    .map(|i| col_name(right, i))
                    .collect();
                let keys: Vec<String> = left_keys
                    .iter()
                    .zip(right_keys)
                    .map(|(l, r)| format!("{} = {}", fmt_expr(l, &ln), fmt_expr(r, &rn)))
                    .collect();
                match method {
                    super::JoinMethod::IndexNestedLoop { .. } => {
                        // The keys probe the right input's index, PostgreSQL's inner
                        // index scan's `Index Cond`.
                        let mut d = join_type("Index Nested Loop");
                        d.details.push(Detail::new("Index Cond", and_text(keys)));
                        d
                    }
                    super::JoinMethod::Hash { build, key_filter, bee } => {
                        let mut d = join_type("Hash Join");
                        d.details.push(Detail::new("Hash Cond", and_text(keys)));
                        if *build == super::JoinSide::Left {
                            d.details.push(Detail::new("Build Side", "left".into()));
                        }
                        if *key_filter {
                            // The scan columns of the streamed input that test the
                            // held keys (`key_source`).
                            let sources = match build {
                                super::JoinSide::Right => super::key_source::filterable_keys(left, left_keys, right_keys),
                                super::JoinSide::Left => super::key_source::filterable_keys(right, right_keys, left_keys),
                            };
                            let named: Vec<String> = sources
                                .iter()
                                .map(|(_, src)| format!("{}.{}", src.table.name, src.table.columns[src.column].name))
                                .collect();
                            d.details.push(Detail::new("Key Filter", named.join(", ")));
                        }
                        if let Some(b) = bee {
                            d.details.push(bee_detail("join", b.0.info()));
                        }
                        d
                    }
                    super::JoinMethod::NestedLoop => join_type("Nested Loop"),
                }
            };
            if let Some(on) = on {
                d.details.push(Detail::new("Join Filter", e(on)));
            }
            if plan.workers > 1 {
                // A join holding its left rows runs its right input on the workers
                // as the probe, any other hash join as the build.
                let probe = matches!(method, super::JoinMethod::Hash { build: super::JoinSide::Left, .. });
                d.details.push(if probe {
                    Detail::number("Probe Workers", plan.workers as u64)
                } else {
                    Detail::number("Build Workers", plan.workers as u64)
                });
            }
            d
        }
        Node::Aggregate { groups, sets, aggs, bee, .. } => {
            let hashed = |node_type| Described {
                title: node_type,
                node_type: "Aggregate",
                fields: vec![("Strategy", Json::Str("Hashed".into()))],
                details: Vec::new(),
            };
            let mut d = if !sets.is_empty() {
                // One hash table per grouping set, each written as PostgreSQL writes
                // a set: `(a, b)`, `(a)`, `()`.
                let sets: Vec<String> = sets
                    .iter()
                    .map(|set| {
                        let members: Vec<String> = set.iter().map(|&i| fmt_expr(&groups[i], &names)).collect();
                        format!("({})", members.join(", "))
                    })
                    .collect();
                let mut d = hashed("HashAggregate".to_string());
                d.details.push(Detail::new("Grouping Sets", sets.join(", ")));
                d
            } else if groups.is_empty() {
                Described {
                    title: "Aggregate".into(),
                    node_type: "Aggregate",
                    fields: vec![("Strategy", Json::Str("Plain".into()))],
                    details: Vec::new(),
                }
            } else {
                let mut d = hashed("HashAggregate".to_string());
                d.details.push(Detail::list("Group Key", groups.iter().map(|x| fmt_expr(x, &names)).collect()));
                d
            };
            let a: Vec<String> = aggs
                .iter()
                .map(|a| {
                    if a.func == AggFunc::CountStar {
                        return "count(*)".to_string();
                    }
                    let f = a.name();
                    let arg = a
                        .args()
                        .take(a.args().count() - a.order.len())
                        .map(|x| fmt_expr(x, &names))
                        .collect::<Vec<_>>()
                        .join(", ");
                    let order = if a.order.is_empty() {
                        String::new()
                    } else {
                        let keys: Vec<String> = a.order.iter().map(|k| sort_key_text(k, &names)).collect();
                        format!(" ORDER BY {}", keys.join(", "))
                    };
                    format!("{f}({}{arg}{order})", if a.distinct { "DISTINCT " } else { "" })
                })
                .collect();
            if !a.is_empty() {
                d.details.push(Detail::list("Aggregates", a));
            }
            if let Some(b) = bee {
                d.details.push(bee_detail("aggregate", b.0.info()));
            }
            if plan.workers > 1 {
                d.details.push(Detail::number("Workers", plan.workers as u64));
            }
            d
        }
        Node::Sort { keys, bee, .. } => {
            let k: Vec<String> = keys.iter().map(|k| sort_key_text(k, &names)).collect();
            let mut d = plain("Sort", "Sort");
            d.details.push(Detail::list("Sort Key", k));
            if let Some(b) = bee {
                d.details.push(bee_detail("sort", b.0.info()));
            }
            d
        }
        Node::Limit { limit, offset, .. } => {
            let mut d = plain("Limit", "Limit");
            if let Some(l) = limit {
                d.details.push(Detail::number("Limit", *l));
            }
            if *offset > 0 {
                d.details.push(Detail::number("Offset", *offset));
            }
            d
        }
        Node::Distinct { .. } => plain("HashDistinct", "HashDistinct"),
        Node::Window { specs, calls, .. } => {
            // One line per window: its definition as SQL writes it, then its calls.
            let mut parts = Vec::new();
            for (i, w) in specs.iter().enumerate() {
                let mut s = String::from("(");
                if !w.partition.is_empty() {
                    s.push_str(&format!("PARTITION BY {} ", list(&w.partition, &names)));
                }
                if !w.order.is_empty() {
                    let k: Vec<String> = w.order.iter().map(|k| sort_key_text(k, &names)).collect();
                    s.push_str(&format!("ORDER BY {} ", k.join(", ")));
                }
                let bound = |b: &FrameBound| match b {
                    FrameBound::UnboundedPreceding => "UNBOUNDED PRECEDING".to_string(),
                    FrameBound::Preceding { offset, .. } => format!("{} PRECEDING", e(offset)),
                    FrameBound::CurrentRow => "CURRENT ROW".to_string(),
                    FrameBound::Following { offset, .. } => format!("{} FOLLOWING", e(offset)),
                    FrameBound::UnboundedFollowing => "UNBOUNDED FOLLOWING".to_string(),
                };
                let units = match w.frame.units {
                    FrameUnits::Rows => "ROWS",
                    FrameUnits::Range => "RANGE",
                    FrameUnits::Groups => "GROUPS",
                };
                let c: Vec<String> = calls
                    .iter()
                    .filter(|c| c.spec == i)
                    .map(|c| format!("{}({})", window_func_name(c.func), list(&c.args, &names)))
                    .collect();
                s.push_str(&format!(
                    "{units} BETWEEN {} AND {}): {}",
                    bound(&w.frame.start),
                    bound(&w.frame.end),
                    c.join(", ")
                ));
                parts.push(s);
            }
            let mut d = plain("WindowAgg", "WindowAgg");
            d.details.push(Detail::lines("Window", parts));
            d
        }
        Node::SetOp { op, all, .. } => {
            let (o, node_type) = match op {
                SetOpKind::Union => ("Union", "Union"),
                SetOpKind::Intersect => ("Intersect", "Intersect"),
                SetOpKind::Except => ("Except", "Except"),
            };
            let mut d = plain(&format!("{o}{}", if *all { " All" } else { "" }), node_type);
            d.fields.push(("All", Json::Bool(*all)));
            d
        }
        Node::RecursiveUnion { name, distinct, .. } => Described {
            title: format!("Recursive Union{} on {name}", if *distinct { "" } else { " All" }),
            node_type: "Recursive Union",
            fields: vec![("CTE Name", Json::Str(name.clone())), ("All", Json::Bool(!*distinct))],
            details: Vec::new(),
        },
        Node::WorkTableScan { name, .. } => Described {
            title: format!("WorkTable Scan on {name}"),
            node_type: "WorkTable Scan",
            fields: vec![("CTE Name", Json::Str(name.clone()))],
            details: Vec::new(),
        },
        Node::CteScan { cte, name, .. } => Described {
            title: format!("CTE Scan on {name}"),
            node_type: "CTE Scan",
            fields: vec![("CTE Name", Json::Str(name.clone()))],
            details: vec![Detail::number("Materialized CTE", cte.0 as u64 + 1)],
        },
        Node::Apply { params, param_base, left_join, .. } => {
            let params: Vec<String> = params
                .iter()
                .enumerate()
                .map(|(k, e)| format!("${} = {}", param_base + k + 1, fmt_expr(e, &names)))
                .collect();
            Described {
                title: format!("Nested Loop{}", if *left_join { " Left Join" } else { "" }),
                node_type: "Nested Loop",
                fields: vec![("Join Type", Json::Str(if *left_join { "Left" } else { "Inner" }.into()))],
                // The right input runs once per distinct set of these values.
                details: vec![Detail::new("Lateral Params", params.join(", "))],
            }
        }
        Node::Series { .. } => Described {
            title: "Function Scan on generate_series".into(),
            node_type: "Function Scan",
            fields: vec![("Function Name", Json::Str("generate_series".into()))],
            details: Vec::new(),
        },
    }
}

/// The SQL name of a window function.
pub fn window_func_name(f: WindowFunc) -> &'static str {
    match f {
        WindowFunc::RowNumber => "row_number",
        WindowFunc::Rank => "rank",
        WindowFunc::DenseRank => "dense_rank",
        WindowFunc::PercentRank => "percent_rank",
        WindowFunc::CumeDist => "cume_dist",
        WindowFunc::Ntile => "ntile",
        WindowFunc::Lag => "lag",
        WindowFunc::Lead => "lead",
        WindowFunc::FirstValue => "first_value",
        WindowFunc::LastValue => "last_value",
        WindowFunc::NthValue => "nth_value",
        WindowFunc::Agg(a) => a.name(),
    }
}

/// A short SQL-like rendering of an expression, naming columns by `names`.
pub fn fmt_expr(e: &Expr, names: &[String]) -> String {
    let f = |x: &Expr| stacker::maybe_grow(128 * 1024, 2 * 1024 * 1024, || fmt_expr(x, names));
    match &e.kind {
        ExprKind::Column(i) => names.get(*i).cloned().unwrap_or_else(|| format!("#{i}")),
        ExprKind::Literal(v) => {
            if v.is_null() {
                "NULL".into()
            } else if e.ty.is_string() {
                format!("'{}'", v.to_string().replace('\'', "''"))
            } else {
                v.to_string()
            }
        }
        ExprKind::Param(n) => format!("${}", n + 1),
        ExprKind::Cast { expr, .. } => format!("{}::{}", f(expr), e.ty),
        ExprKind::Neg(x) => format!("-{}", f(x)),
        ExprKind::Arith { op, left, right } => {
            let o = op.symbol();
            format!("({} {o} {})", f(left), f(right))
        }
        ExprKind::Compare { op, left, right } => {
            let o = op.symbol();
            format!("({} {o} {})", f(left), f(right))
        }
        ExprKind::IsDistinctFrom {
            left,
            right,
            negated,
        } => {
            format!(
                "({} IS {}DISTINCT FROM {})",
                f(left),
                if *negated { "NOT " } else { "" },
                f(right)
            )
        }
        ExprKind::And(v) => format!("({})", v.iter().map(f).collect::<Vec<_>>().join(" AND ")),
        ExprKind::Or(v) => format!("({})", v.iter().map(f).collect::<Vec<_>>().join(" OR ")),
        ExprKind::Not(x) => format!("NOT {}", f(x)),
        ExprKind::IsNull { expr, negated } => format!(
            "({} IS {}NULL)",
            f(expr),
            if *negated { "NOT " } else { "" }
        ),
        ExprKind::IsBool {
            expr,
            value,
            negated,
        } => {
            format!(
                "({} IS {}{})",
                f(expr),
                if *negated { "NOT " } else { "" },
                if *value { "TRUE" } else { "FALSE" }
            )
        }
        ExprKind::Case { .. } => "CASE … END".into(),
        ExprKind::InList {
            expr,
            list,
            negated,
        } => format!(
            "({} {}IN ({}))",
            f(expr),
            if *negated { "NOT " } else { "" },
            list.iter().map(f).collect::<Vec<_>>().join(", ")
        ),
        ExprKind::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
            ..
        } => format!(
            "({} {}{} {})",
            f(expr),
            if *negated { "NOT " } else { "" },
            if *case_insensitive { "ILIKE" } else { "LIKE" },
            f(pattern)
        ),
        ExprKind::Coalesce(v) => format!(
            "COALESCE({})",
            v.iter().map(f).collect::<Vec<_>>().join(", ")
        ),
        ExprKind::Func { func: Func::Concat, args } => format!(
            "({})",
            args.iter().map(f).collect::<Vec<_>>().join(" || ")
        ),
        ExprKind::Func { func: Func::CurrentDate, .. } => "CURRENT_DATE".to_string(),
        ExprKind::Func { func, args } => format!(
            "{}({})",
            func.sql_name(),
            args.iter().map(f).collect::<Vec<_>>().join(", ")
        ),
        ExprKind::Udf { udf, args } => format!(
            "{}({})",
            udf.name,
            args.iter().map(f).collect::<Vec<_>>().join(", ")
        ),
        ExprKind::Extract { field, expr } => format!("EXTRACT({field:?} FROM {})", f(expr)),
        ExprKind::Subquery(s) => format!("(SubPlan {})", s.id + 1),
    }
}
