//! The catalog: tables, columns, indexes and views, stored in the database file.

use beedb_storage::Store;

use crate::error::Result;

/// All schema objects of a database at one point in time. Immutable once shared; a
/// transaction that changes the schema works on its own copy.
#[derive(Debug, Clone, Default)]
pub struct Catalog {}

impl Catalog {
    pub fn load(store: &Store) -> Result<Catalog> {
        let _ = store;
        Ok(Catalog::default())
    }
}
