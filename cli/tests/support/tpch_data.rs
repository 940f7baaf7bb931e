//! Where the TPC-H answer test and the bee benchmark keep their `.tbl` files:
//! `<target>/tpch-data/sf<scale>/` (never committed; a new folder name since the
//! lines lost dbgen's trailing `|`, so files of the old format are not reused). The files come from the lab's
//! generator (`beedb_lab::tpch_data`, the `tpchgen` crate).

use std::path::PathBuf;

#[allow(unused_imports)]
pub use beedb_lab::tpch_data::{TABLE_NAMES, ensure_data};

/// `<target>/tpch-data/sf<scale>` for an executable in `<target>/<profile>/deps/`.
pub fn data_dir(scale_name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("executable path");
    let target = exe
        .ancestors()
        .nth(3)
        .expect("executable lives in <target>/<profile>/deps");
    target.join("tpch-data").join(scale_name)
}
