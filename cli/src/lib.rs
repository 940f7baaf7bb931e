//! The BeeDB command-line tools' shared code: the sqllogictest runner ([`slt`]) that the
//! `beedb-slt` binary and the SQL tests (`tests/slt.rs`) use. The shell itself lives in
//! the `beedb` binary (`src/main.rs`, `src/shell/`).

pub mod slt;
