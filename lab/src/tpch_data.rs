//! TPC-H data from the `tpchgen` crate (the library behind `tpchgen-cli`): `.tbl`
//! files, `|`-delimited, generated once per scale factor into a folder the caller
//! names (never committed). Used by the lab's `load` workload, the TPC-H answer test
//! and the bee benchmark.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The eight tables, in load order.
pub const TABLE_NAMES: [&str; 8] = [
    "nation", "region", "part", "supplier", "partsupp", "customer", "orders", "lineitem",
];

/// The TPC-H schema (the standard's column types, no keys or indexes).
pub const SCHEMA: &str = include_str!("../sql/tpch_schema.sql");

/// Writes the `.tbl` files of `scale` that are missing into `dir` (each through a
/// temporary file, so a file that exists is complete) and returns `dir`. Lines have
/// no trailing delimiter, so every engine's COPY reads them as they are.
/// `on_table` is called after each table (for progress).
pub fn ensure_data_with(dir: &Path, scale: f64, mut on_table: impl FnMut(&str)) -> std::io::Result<PathBuf> {
    static GENERATING: Mutex<()> = Mutex::new(());
    let _guard = GENERATING.lock().unwrap_or_else(|e| e.into_inner());
    std::fs::create_dir_all(dir)?;
    for table in TABLE_NAMES {
        let path = dir.join(format!("{table}.tbl"));
        if !path.is_file() {
            let temporary = dir.join(format!("{table}.tbl.{}.tmp", std::process::id()));
            let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&temporary)?);
            write_table(table, scale, &mut out)?;
            out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            std::fs::rename(&temporary, &path)?;
        }
        on_table(table);
    }
    Ok(dir.to_path_buf())
}

/// [`ensure_data_with`] without progress; panics on I/O errors (for tests and benches).
pub fn ensure_data(dir: &Path, scale: f64) -> PathBuf {
    ensure_data_with(dir, scale, |_| {}).expect("write TPC-H data")
}

fn write_table(table: &str, scale: f64, out: &mut impl Write) -> std::io::Result<()> {
    use tpchgen::generators::*;
    let mut line = String::new();
    macro_rules! rows {
        ($generator:ident) => {
            for row in $generator::new(scale, 1, 1).iter() {
                line.clear();
                std::fmt::write(&mut line, format_args!("{row}")).expect("formatting a row");
                out.write_all(line.strip_suffix('|').unwrap_or(&line).as_bytes())?;
                out.write_all(b"\n")?;
            }
        };
    }
    match table {
        "nation" => rows!(NationGenerator),
        "region" => rows!(RegionGenerator),
        "part" => rows!(PartGenerator),
        "supplier" => rows!(SupplierGenerator),
        "partsupp" => rows!(PartSuppGenerator),
        "customer" => rows!(CustomerGenerator),
        "orders" => rows!(OrderGenerator),
        "lineitem" => rows!(LineItemGenerator),
        other => return Err(std::io::Error::other(format!("unknown TPC-H table {other}"))),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_have_no_trailing_delimiter_and_the_schema_names_them_all() {
        let dir = tempfile::tempdir().unwrap();
        ensure_data(dir.path(), 0.001);
        let nation = std::fs::read_to_string(dir.path().join("nation.tbl")).unwrap();
        assert_eq!(nation.lines().count(), 25);
        assert!(nation.lines().all(|l| !l.ends_with('|') && l.split('|').count() == 4));
        for t in TABLE_NAMES {
            assert!(SCHEMA.contains(&format!("create table {t} (")), "{t}");
        }
    }
}
