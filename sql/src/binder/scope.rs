//! Name scopes: the columns a query level can see, with the table names or aliases
//! that qualify them.

use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::types::DataType;

#[derive(Debug, Clone)]
pub struct ScopeColumn {
    /// Table name or alias that qualifies the column.
    pub table: Option<String>,
    pub name: String,
    pub ty: DataType,
    /// What a reference evaluates to (a column of the input, or for a USING column of
    /// a full join, the COALESCE of both sides).
    pub expr: Expr,
    /// Not found by an unqualified name (the two sides of a USING column).
    pub qualified_only: bool,
    /// Found only by an unqualified name (the merged USING column).
    pub unqualified_only: bool,
}

/// The columns of one query level's FROM clause.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub columns: Vec<ScopeColumn>,
    /// Entries `*` expands to, in order.
    pub star: Vec<usize>,
    /// (relation name, alias) of each relation the FROM clause renamed: a reference
    /// by the hidden name is an error whose hint names the alias, as PostgreSQL's.
    pub aliases: Vec<(String, String)>,
    /// Tables (names or aliases) on the nullable side of an outer join of this FROM
    /// clause: their columns are all NULL in a row where they had no match.
    pub nullable: Vec<String>,
    /// (table, column) of the columns that never hold NULL in their relation (a
    /// table's NOT NULL columns): NULL there only where the table had no match.
    pub never_null: Vec<(String, String)>,
}

impl Scope {
    /// A scope over a relation's output columns `0..n`.
    pub fn relation(table: Option<&str>, cols: &[(String, DataType)], offset: usize) -> Scope {
        let columns: Vec<ScopeColumn> = cols
            .iter()
            .enumerate()
            .map(|(i, (name, ty))| ScopeColumn {
                table: table.map(str::to_string),
                name: name.clone(),
                ty: *ty,
                expr: Expr::column(offset + i, *ty),
                qualified_only: false,
                unqualified_only: false,
            })
            .collect();
        let star = (0..columns.len()).collect();
        Scope { columns, star, aliases: Vec::new(), nullable: Vec::new(), never_null: Vec::new() }
    }

    /// Finds `name` (optionally qualified by `table`). `Ok(None)` when absent.
    pub fn resolve(&self, table: Option<&str>, name: &str) -> Result<Option<&ScopeColumn>> {
        let mut found: Option<&ScopeColumn> = None;
        for c in &self.columns {
            let ok = match table {
                Some(t) => !c.unqualified_only && c.table.as_deref() == Some(t) && c.name == name,
                None => !c.qualified_only && c.name == name,
            };
            if ok {
                if found.is_some() {
                    let full = match table {
                        Some(t) => format!("{t}.{name}"),
                        None => name.to_string(),
                    };
                    return Err(Error::ambiguous_column(&full));
                }
                found = Some(c);
            }
        }
        Ok(found)
    }

    /// The tables (names or aliases) this scope's columns are qualified by.
    pub fn tables(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for c in &self.columns {
            if let Some(t) = &c.table
                && !names.contains(t)
            {
                names.push(t.clone());
            }
        }
        names
    }

    pub fn has_table(&self, table: &str) -> bool {
        self.columns.iter().any(|c| c.table.as_deref() == Some(table))
    }

    /// The error for a reference qualified by `table`, which no scope in `scopes`
    /// (innermost last) has: PostgreSQL's "invalid reference … / Perhaps you meant to
    /// reference the table alias" when a FROM clause renamed a relation of that name,
    /// else "missing FROM-clause entry".
    pub fn missing_table<'a>(table: &str, scopes: impl DoubleEndedIterator<Item = &'a Scope>) -> crate::error::Error {
        let alias = scopes.rev().find_map(|s| s.aliases.iter().find(|(name, _)| name == table).map(|(_, a)| a.clone()));
        match alias {
            Some(a) => crate::error::Error::semantic(
                "42P01",
                format!("invalid reference to FROM-clause entry for table \"{table}\""),
            )
            .with_hint(format!("Perhaps you meant to reference the table alias \"{a}\".")),
            None => crate::error::Error::semantic("42P01", format!("missing FROM-clause entry for table \"{table}\"")),
        }
    }
}
