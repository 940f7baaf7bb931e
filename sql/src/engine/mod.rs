//! Statement execution: transaction handling around the binder, planner and executor.

use sqlparser::ast::Statement;

use crate::error::{Error, Result};
use crate::session::{Connection, QueryResult};
use crate::types::Value;

/// A connection's transaction state.
#[derive(Default)]
pub enum TxnState {
    /// Autocommit: each statement is its own transaction.
    #[default]
    Idle,
}

impl TxnState {
    pub fn in_block(&self) -> bool {
        false
    }
}

/// Number of distinct parameters a statement refers to.
pub fn count_params(ast: &Statement) -> usize {
    let _ = ast;
    0
}

/// Runs one parsed statement.
pub fn execute(conn: &mut Connection, sql: &str, ast: &Statement, params: &[Value]) -> Result<QueryResult> {
    let _ = (conn, sql, ast, params);
    Err(Error::not_supported("statement execution"))
}
