//! System tables: read-only relations computed from the catalog.
//!
//! - `information_schema.tables (table_schema, table_name, table_type)`
//! - `information_schema.columns (table_name, column_name, ordinal_position,
//!   data_type, is_nullable, column_default, is_identity, identity_generation)`
//! - `information_schema.sequences (sequence_catalog, sequence_schema,
//!   sequence_name, data_type, numeric_precision, numeric_precision_radix,
//!   numeric_scale, start_value, minimum_value, maximum_value, increment,
//!   cycle_option)`: every sequence but identity columns' (SERIAL columns' too),
//!   as PostgreSQL's; the catalog is `beedb`
//! - `beedb_indexes (index_name, table_name, columns, is_unique, is_primary,
//!   is_clustered)`: `is_clustered` names the index the last `CLUSTER` used
//! - `beedb_stats (table_name, column_name, null_frac, n_distinct, avg_width,
//!   correlation)`: the column statistics ANALYZE gathered, as PostgreSQL's
//!   `pg_stats` shows them (`n_distinct` negative: minus a fraction of the rows)
//! - `beedb_table_stats (table_name, row_count, page_count)`: each table's live rows
//!   and heap pages when last counted (ANALYZE, COPY), as PostgreSQL's
//!   `pg_class.reltuples` and `relpages` (pages 0 when counted before pages were kept)
//! - `beedb_check_constraints (constraint_name, table_name, check_clause)`: CHECK
//!   constraints, the clause as stored (`a > 0`)
//! - `beedb_foreign_keys (constraint_name, table_name, columns, referenced_table,
//!   referenced_columns, on_delete, on_update)`: FOREIGN KEY constraints, column
//!   lists comma-separated, actions as SQL (`NO ACTION`, `CASCADE`)
//! - `beedb_schema (type, name, table_name, sql)`: every object with the SQL that
//!   creates it, like SQLite's `sqlite_master`: tables (SERIAL and identity columns
//!   written as such), their indexes, sequences no column owns, views.
//! - `beedb_bees (id, kind, owner, maker, code_bytes, build_us, invocations,
//!   tuples, reason)`: the live bees of the database's bee cache.

use crate::catalog::{Catalog, TableDef};
use crate::expr::Expr;
use crate::plan::{Node, OutputColumn, Plan};
use crate::types::{DataType, Value};

fn text(s: impl Into<String>) -> Expr {
    Expr::literal(Value::Text(s.into()), DataType::Text)
}

fn values(cols: &[(&str, DataType)], rows: Vec<Vec<Expr>>) -> Plan {
    let schema = cols
        .iter()
        .map(|(n, t)| OutputColumn {
            name: n.to_string(),
            ty: *t,
        })
        .collect::<Vec<_>>();
    Plan::new(Node::Values { rows }, schema)
}

/// The CREATE TABLE statement for a table (with its constraints).
pub fn table_sql(catalog: &Catalog, t: &TableDef) -> String {
    let mut parts: Vec<String> = t
        .columns
        .iter()
        .map(|c| {
            // A SERIAL or identity column is written as one, so that replaying the
            // statement makes its sequence too (a `DEFAULT nextval('t_id_seq')` would
            // name a sequence nothing creates).
            let owned = catalog.sequences.values().find(|q| {
                q.owner.as_ref().is_some_and(|o| o.table == t.id && o.column == c.name)
            });
            match owned.map(|q| (q, q.owner.as_ref().and_then(|o| o.identity))) {
                Some((q, None)) if serial_name(q.ty).is_some() => {
                    return format!("{} {}", quote_ident(&c.name), serial_name(q.ty).unwrap_or("serial"));
                }
                Some((q, Some(kind))) => {
                    let kind = match kind {
                        crate::catalog::Identity::Always => "ALWAYS",
                        crate::catalog::Identity::ByDefault => "BY DEFAULT",
                    };
                    // Its sequence's name when replaying would not give the same one
                    // (`SEQUENCE NAME`, a renamed table, a default name that was taken).
                    let mut options = sequence_options(q);
                    if q.name != crate::engine::sequence::default_name(&t.name, &c.name) {
                        let named = format!("SEQUENCE NAME {}", quote_ident(&q.name));
                        options = if options.is_empty() { named } else { format!("{named} {options}") };
                    }
                    let options = if options.is_empty() { String::new() } else { format!(" ({options})") };
                    return format!("{} {} GENERATED {kind} AS IDENTITY{options}", quote_ident(&c.name), c.ty);
                }
                _ => {}
            }
            let mut s = format!("{} {}", quote_ident(&c.name), c.ty);
            if c.not_null {
                s.push_str(" NOT NULL");
            }
            if let Some(d) = &c.default {
                s.push_str(&format!(" DEFAULT {d}"));
            }
            s
        })
        .collect();
    for i in t.indexes.iter().filter(|i| i.primary) {
        let cols: Vec<String> = i.columns.iter().map(|&c| quote_ident(&t.columns[c].name)).collect();
        parts.push(format!("PRIMARY KEY ({})", cols.join(", ")));
    }
    for c in &t.checks {
        parts.push(format!("CONSTRAINT {} CHECK ({})", quote_ident(&c.name), c.expr));
    }
    for f in &t.foreign_keys {
        parts.push(foreign_key_sql(catalog, f));
    }
    format!("CREATE TABLE {} ({})", quote_ident(&t.name), parts.join(", "))
}

/// The SERIAL type that makes a column of type `ty` with its own sequence.
fn serial_name(ty: DataType) -> Option<&'static str> {
    match ty {
        DataType::SmallInt => Some("smallserial"),
        DataType::Integer => Some("serial"),
        DataType::BigInt => Some("bigserial"),
        _ => None,
    }
}

/// A sequence's options that differ from the defaults for its type and direction, in
/// the order the parser reads them (INCREMENT, MINVALUE, MAXVALUE, START, CYCLE).
fn sequence_options(q: &crate::catalog::SequenceDef) -> String {
    let (type_min, type_max) = match q.ty {
        DataType::SmallInt => (i16::MIN as i64, i16::MAX as i64),
        DataType::Integer => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    };
    let (min, max) = if q.increment > 0 { (1, type_max) } else { (type_min, -1) };
    let start = if q.increment > 0 { q.min } else { q.max };
    let mut o = Vec::new();
    if q.increment != 1 {
        o.push(format!("INCREMENT BY {}", q.increment));
    }
    if q.min != min {
        o.push(format!("MINVALUE {}", q.min));
    }
    if q.max != max {
        o.push(format!("MAXVALUE {}", q.max));
    }
    if q.start != start {
        o.push(format!("START WITH {}", q.start));
    }
    if q.cycle {
        o.push("CYCLE".to_string());
    }
    o.join(" ")
}

/// `CREATE SEQUENCE` for a sequence no column owns.
pub fn sequence_sql(q: &crate::catalog::SequenceDef) -> String {
    let options = sequence_options(q);
    let options = if options.is_empty() { String::new() } else { format!(" {options}") };
    format!("CREATE SEQUENCE {} AS {}{options}", quote_ident(&q.name), q.ty)
}

/// `CONSTRAINT name FOREIGN KEY (b) REFERENCES p (a) [ON DELETE …] [ON UPDATE …]`.
fn foreign_key_sql(catalog: &Catalog, f: &crate::catalog::ForeignKeyDef) -> String {
    let list = |cols: &[String]| cols.iter().map(|c| quote_ident(c)).collect::<Vec<_>>().join(", ");
    let parent = catalog.table_by_id(f.parent).map_or_else(|| "?".to_string(), |p| quote_ident(&p.name));
    let mut s = format!(
        "CONSTRAINT {} FOREIGN KEY ({}) REFERENCES {parent} ({})",
        quote_ident(&f.name),
        list(&f.columns),
        list(&f.parent_columns)
    );
    if f.on_delete != crate::catalog::FkAction::NoAction {
        s.push_str(&format!(" ON DELETE {}", f.on_delete.sql()));
    }
    if f.on_update != crate::catalog::FkAction::NoAction {
        s.push_str(&format!(" ON UPDATE {}", f.on_update.sql()));
    }
    s
}

pub fn quote_ident(s: &str) -> String {
    let plain = s
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && s.chars().next().is_some_and(|c| !c.is_ascii_digit());
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

pub fn system_table(catalog: &Catalog, bees: Option<&beedb_bees::BeeCache>, name: &str) -> Option<Plan> {
    match name {
        "beedb_bees" => {
            let rows = bees
                .map(|c| c.rows())
                .unwrap_or_default()
                .into_iter()
                .map(|b| {
                    let big = |x: u64| Expr::literal(Value::BigInt(x as i64), DataType::BigInt);
                    vec![
                        big(b.id),
                        text(b.kind.to_string()),
                        text(b.owner),
                        text(b.maker.to_string()),
                        big(b.code_bytes as u64),
                        Expr::literal(Value::Double(b.build_us), DataType::Double),
                        big(b.invocations),
                        big(b.tuples),
                        text(b.reason),
                    ]
                })
                .collect();
            Some(values(
                &[
                    ("id", DataType::BigInt),
                    ("kind", DataType::Text),
                    ("owner", DataType::Text),
                    ("maker", DataType::Text),
                    ("code_bytes", DataType::BigInt),
                    ("build_us", DataType::Double),
                    ("invocations", DataType::BigInt),
                    ("tuples", DataType::BigInt),
                    ("reason", DataType::Text),
                ],
                rows,
            ))
        }
        "information_schema.tables" => {
            let mut rows: Vec<Vec<Expr>> = catalog
                .tables
                .keys()
                .map(|n| vec![text("public"), text(n.clone()), text("BASE TABLE")])
                .collect();
            rows.extend(catalog.views.keys().map(|n| vec![text("public"), text(n.clone()), text("VIEW")]));
            Some(values(
                &[("table_schema", DataType::Text), ("table_name", DataType::Text), ("table_type", DataType::Text)],
                rows,
            ))
        }
        "information_schema.columns" => {
            let mut rows = Vec::new();
            let null = || Expr::literal(Value::Null, DataType::Text);
            for t in catalog.tables.values() {
                for (i, c) in t.columns.iter().enumerate() {
                    // As PostgreSQL: an identity column shows no default.
                    let identity = catalog.identity(t, &c.name);
                    rows.push(vec![
                        text(t.name.clone()),
                        text(c.name.clone()),
                        Expr::literal(Value::Integer(i as i32 + 1), DataType::Integer),
                        text(c.ty.to_string()),
                        text(if c.not_null { "NO" } else { "YES" }),
                        match &c.default {
                            Some(d) if identity.is_none() => text(d.clone()),
                            _ => null(),
                        },
                        text(if identity.is_some() { "YES" } else { "NO" }),
                        match identity {
                            Some(crate::catalog::Identity::Always) => text("ALWAYS"),
                            Some(crate::catalog::Identity::ByDefault) => text("BY DEFAULT"),
                            None => null(),
                        },
                    ]);
                }
            }
            Some(values(
                &[
                    ("table_name", DataType::Text),
                    ("column_name", DataType::Text),
                    ("ordinal_position", DataType::Integer),
                    ("data_type", DataType::Text),
                    ("is_nullable", DataType::Text),
                    ("column_default", DataType::Text),
                    ("is_identity", DataType::Text),
                    ("identity_generation", DataType::Text),
                ],
                rows,
            ))
        }
        "information_schema.sequences" => {
            let int = |x: i32| Expr::literal(Value::Integer(x), DataType::Integer);
            let rows = catalog
                .sequences
                .values()
                // As PostgreSQL's view: not identity columns' sequences.
                .filter(|q| q.owner.as_ref().is_none_or(|o| o.identity.is_none()))
                .map(|q| {
                    let bits = match q.ty {
                        DataType::SmallInt => 16,
                        DataType::Integer => 32,
                        _ => 64,
                    };
                    vec![
                        text("beedb"),
                        text("public"),
                        text(q.name.clone()),
                        text(q.ty.to_string()),
                        int(bits),
                        int(2),
                        int(0),
                        text(q.start.to_string()),
                        text(q.min.to_string()),
                        text(q.max.to_string()),
                        text(q.increment.to_string()),
                        text(if q.cycle { "YES" } else { "NO" }),
                    ]
                })
                .collect();
            Some(values(
                &[
                    ("sequence_catalog", DataType::Text),
                    ("sequence_schema", DataType::Text),
                    ("sequence_name", DataType::Text),
                    ("data_type", DataType::Text),
                    ("numeric_precision", DataType::Integer),
                    ("numeric_precision_radix", DataType::Integer),
                    ("numeric_scale", DataType::Integer),
                    ("start_value", DataType::Text),
                    ("minimum_value", DataType::Text),
                    ("maximum_value", DataType::Text),
                    ("increment", DataType::Text),
                    ("cycle_option", DataType::Text),
                ],
                rows,
            ))
        }
        "beedb_indexes" => {
            let mut rows = Vec::new();
            for t in catalog.tables.values() {
                for i in &t.indexes {
                    let cols: Vec<&str> = i.columns.iter().map(|&c| t.columns[c].name.as_str()).collect();
                    rows.push(vec![
                        text(i.name.clone()),
                        text(t.name.clone()),
                        text(cols.join(", ")),
                        Expr::literal(Value::Boolean(i.unique), DataType::Boolean),
                        Expr::literal(Value::Boolean(i.primary), DataType::Boolean),
                        Expr::literal(Value::Boolean(i.clustered), DataType::Boolean),
                    ]);
                }
            }
            Some(values(
                &[
                    ("index_name", DataType::Text),
                    ("table_name", DataType::Text),
                    ("columns", DataType::Text),
                    ("is_unique", DataType::Boolean),
                    ("is_primary", DataType::Boolean),
                    ("is_clustered", DataType::Boolean),
                ],
                rows,
            ))
        }
        "beedb_stats" => {
            let mut rows = Vec::new();
            for t in catalog.tables.values() {
                let Some(stats) = catalog.stats.get(&t.id) else { continue };
                for (c, s) in t.columns.iter().zip(&stats.columns) {
                    let double = |x: f64| Expr::literal(Value::Double(x), DataType::Double);
                    rows.push(vec![
                        text(t.name.clone()),
                        text(c.name.clone()),
                        double(s.null_frac),
                        double(s.distinct),
                        double(s.avg_width),
                        double(s.correlation),
                    ]);
                }
            }
            Some(values(
                &[
                    ("table_name", DataType::Text),
                    ("column_name", DataType::Text),
                    ("null_frac", DataType::Double),
                    ("n_distinct", DataType::Double),
                    ("avg_width", DataType::Double),
                    ("correlation", DataType::Double),
                ],
                rows,
            ))
        }
        "beedb_table_stats" => {
            let mut rows = Vec::new();
            for t in catalog.tables.values() {
                let Some(stats) = catalog.stats.get(&t.id) else { continue };
                let count = |x: u64| Expr::literal(Value::BigInt(i64::try_from(x).unwrap_or(i64::MAX)), DataType::BigInt);
                rows.push(vec![text(t.name.clone()), count(stats.rows), count(stats.pages)]);
            }
            Some(values(&[("table_name", DataType::Text), ("row_count", DataType::BigInt), ("page_count", DataType::BigInt)], rows))
        }
        "beedb_check_constraints" => {
            let mut rows = Vec::new();
            for t in catalog.tables.values() {
                for c in &t.checks {
                    rows.push(vec![text(c.name.clone()), text(t.name.clone()), text(c.expr.clone())]);
                }
            }
            Some(values(
                &[
                    ("constraint_name", DataType::Text),
                    ("table_name", DataType::Text),
                    ("check_clause", DataType::Text),
                ],
                rows,
            ))
        }
        "beedb_foreign_keys" => {
            let mut rows = Vec::new();
            for t in catalog.tables.values() {
                for f in &t.foreign_keys {
                    let parent = catalog.table_by_id(f.parent).map_or_else(String::new, |p| p.name.clone());
                    rows.push(vec![
                        text(f.name.clone()),
                        text(t.name.clone()),
                        text(f.columns.join(", ")),
                        text(parent),
                        text(f.parent_columns.join(", ")),
                        text(f.on_delete.sql()),
                        text(f.on_update.sql()),
                    ]);
                }
            }
            Some(values(
                &[
                    ("constraint_name", DataType::Text),
                    ("table_name", DataType::Text),
                    ("columns", DataType::Text),
                    ("referenced_table", DataType::Text),
                    ("referenced_columns", DataType::Text),
                    ("on_delete", DataType::Text),
                    ("on_update", DataType::Text),
                ],
                rows,
            ))
        }
        "beedb_schema" => {
            let mut rows = Vec::new();
            for t in catalog.tables.values() {
                rows.push(vec![text("table"), text(t.name.clone()), text(t.name.clone()), text(table_sql(catalog, t))]);
                for i in t.indexes.iter().filter(|i| !i.primary) {
                    let cols: Vec<String> = i.columns.iter().map(|&c| quote_ident(&t.columns[c].name)).collect();
                    rows.push(vec![
                        text("index"),
                        text(i.name.clone()),
                        text(t.name.clone()),
                        text(format!(
                            "CREATE {}INDEX {} ON {} ({})",
                            if i.unique { "UNIQUE " } else { "" },
                            quote_ident(&i.name),
                            quote_ident(&t.name),
                            cols.join(", ")
                        )),
                    ]);
                }
            }
            for q in catalog.sequences.values().filter(|q| q.owner.is_none()) {
                rows.push(vec![text("sequence"), text(q.name.clone()), text(q.name.clone()), text(sequence_sql(q))]);
            }
            for v in catalog.views.values() {
                let cols = if v.columns.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", v.columns.iter().map(|c| quote_ident(c)).collect::<Vec<_>>().join(", "))
                };
                rows.push(vec![
                    text("view"),
                    text(v.name.clone()),
                    text(v.name.clone()),
                    text(format!("CREATE VIEW {}{cols} AS {}", quote_ident(&v.name), v.query)),
                ]);
            }
            Some(values(
                &[("type", DataType::Text), ("name", DataType::Text), ("table_name", DataType::Text), ("sql", DataType::Text)],
                rows,
            ))
        }
        _ => None,
    }
}
