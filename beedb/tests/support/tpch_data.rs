//! TPC-H `.tbl` files from the `tpchgen` crate (the library behind `tpchgen-cli`),
//! shared by the TPC-H answer test and the bee benchmark. Files are generated once
//! per scale factor into `<target>/tpch/sf<scale>/` (never committed).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The eight tables, in load order.
pub const TABLE_NAMES: [&str; 8] = [
    "nation", "region", "part", "supplier", "partsupp", "customer", "orders", "lineitem",
];

/// `<target>/tpch/sf<scale>` for an executable in `<target>/<profile>/deps/`.
pub fn data_dir(scale_name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("executable path");
    let target = exe
        .ancestors()
        .nth(3)
        .expect("executable lives in <target>/<profile>/deps");
    target.join("tpch").join(scale_name)
}

/// Writes the `.tbl` files of `scale` that are missing into `dir` (each through a
/// temporary file, so a file that exists is complete) and returns `dir`.
pub fn ensure_data(dir: &Path, scale: f64) -> PathBuf {
    static GENERATING: Mutex<()> = Mutex::new(());
    let _guard = GENERATING.lock().unwrap_or_else(|e| e.into_inner());
    std::fs::create_dir_all(dir).expect("create the TPC-H data folder");
    for table in TABLE_NAMES {
        let path = dir.join(format!("{table}.tbl"));
        if path.is_file() {
            continue;
        }
        let temporary = dir.join(format!("{table}.tbl.{}.tmp", std::process::id()));
        let mut out = std::io::BufWriter::new(std::fs::File::create(&temporary).unwrap());
        write_table(table, scale, &mut out).expect("write TPC-H data");
        out.into_inner().unwrap().sync_all().unwrap();
        std::fs::rename(&temporary, &path).unwrap();
    }
    dir.to_path_buf()
}

fn write_table(table: &str, scale: f64, out: &mut impl std::io::Write) -> std::io::Result<()> {
    use tpchgen::generators::*;
    macro_rules! rows {
        ($generator:ident) => {
            for row in $generator::new(scale, 1, 1).iter() {
                writeln!(out, "{row}")?;
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
        other => panic!("unknown table {other}"),
    }
    Ok(())
}
