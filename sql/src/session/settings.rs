//! Session settings: what `SET name = value`, `SET name TO value`, `RESET name` and
//! `SHOW name` act on.
//!
//! | name            | values                         | default  |
//! |-----------------|--------------------------------|----------|
//! | `memory_limit`  | bytes, or with kB/MB/GB        | `1GB`    |
//! | `synchronous`   | `off`, `normal`, `full`        | `full`   |
//! | `writer_timeout`| milliseconds, or with ms/s     | `5s`     |
//! | `statement_timeout` | milliseconds, or with ms/s/min; `0` = none | `0` |
//! | `bees`          | `on`, `off`: all bees          | `on`     |
//! | `bee_deform`    | `on`, `off`: deform bees       | `on`     |
//! | `bee_form`      | `on`, `off`: form bees         | `on`     |
//! | `bee_scan`      | `on`, `off`: scan bees         | `on`     |
//! | `bee_sort`      | `on`, `off`: sort bees         | `on`     |
//! | `bee_agg`       | `on`, `off`: aggregate bees    | `on`     |
//! | `bee_join`      | `on`, `off`: join bees (hash join probes) | `on` |
//! | `bee_maker`     | `auto`, `compiled`, `instantiated` | `auto` |
//! | `bee_code_limit`| bytes of bee machine code, or with kB/MB/GB | `64MB` |
//! | `optimizer_join_order` | `on`, `off`: inner joins ordered by estimated cost | `on` |
//! | `optimizer_filter_pushdown` | `on`, `off`: filters pushed below joins and into scans | `on` |
//! | `optimizer_index_access` | `on`, `off`: scans read through an index where one applies | `on` |
//! | `optimizer_index_order` | `on`, `off`: ORDER BY and MIN/MAX read an index in order instead of sorting | `on` |
//! | `optimizer_index_join` | `on`, `off`: joins look rows up through an index on the key columns where cheaper than hashing | `on` |
//! | `optimizer_build_side` | `on`, `off`: a join builds on its smaller input | `on` |
//! | `optimizer_column_pruning` | `on`, `off`: each operator produces only the columns read above it | `on` |
//! | `optimizer_decorrelate` | `on`, `off`: subqueries become joins | `on` |
//! | `optimizer_reduce_outer_joins` | `on`, `off`: an outer join whose NULL-extended rows a condition above rejects becomes an inner join | `on` |
//! | `optimizer_semi_pushdown` | `on`, `off`: semi and anti joins move below the inner joins of their left input where they filter more | `on` |
//! | `optimizer_magic_set` | `on`, `off`: an aggregate joined on a grouping column first keeps only the keys a selective other side can match | `on` |
//! | `optimizer_simplify` | `on`, `off`: constant subexpressions become literals; a date compared with a timestamp constant is compared as a date | `on` |
//! | `optimizer_join_filter` | `on`, `off`: a hash join that drops probe rows without a match has the scan of its integer probe key skip the tuples whose key is not among the build's, before decoding them | `on` |
//! | `enable_seqscan` | `on`, `off`: off, a filtered scan reads through a usable index whatever it costs | `on` |
//! | `enable_indexscan` | `on`, `off`: off, no plan reads an index | `on` |
//! | `enable_hashjoin` | `on`, `off`: off, equi-joins are index nested loops where an index fits, else nested loops | `on` |
//! | `enable_nestloop` | `on`, `off`: off, no index nested-loop joins (joins without keys stay nested loops) | `on` |
//! | `point_path` | `on`, `off`: off, point statements run through the operator tree too | `on` |
//! | `statement_shapes` | `on`, `off`: a statement run by text whose literals stand where a parameter binds as they do runs as the prepared statement of its shape, literals as parameters (`engine/shape.rs`); off, every distinct text is parsed and planned | `on` |
//! | `threads` | 1–64: threads one statement's aggregation pipeline may use | the machine's cores |
//! | `parallel_min_rows` | rows: heap scans estimated shorter run on one thread | `100000` |
//!
//! `synchronous`, `writer_timeout` and `bee_code_limit` act on the database and so
//! on every connection to it (as SQLite's `PRAGMA synchronous` does). The bee
//! switches are per session; with a kind switched off its operators use the
//! generic path (`bees/README.md` in the repository explains the bee module). The
//! optimizer switches are per session too; each turns one rule of `optimizer/` off so
//! its effect can be measured. The `enable_…` switches are PostgreSQL's: each forces
//! a physical choice, so a plan can be timed against its alternatives
//! (`optimizer/methods.rs`).

use std::time::Duration;

use beedb_bees::BeeCache;
use beedb_storage::{Store, Synchronous};

use crate::bees::BeeSettings;

use crate::error::{Error, Result};

/// The current values of a session's settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Most bytes a statement's operators may hold (hash tables, sorts, buffers).
    pub memory_limit: usize,
    /// Which bees statements use.
    pub bees: BeeSettings,
    /// A statement running longer is cancelled (SQLSTATE 57014); `None` = no limit.
    pub statement_timeout: Option<Duration>,
    /// Which optimizer rules statements use.
    pub optimizer: crate::optimizer::Rules,
    /// Point statements (one tuple by a unique key) run on the point path
    /// (`exec/point.rs`); off, through the operator tree like any plan.
    pub point_path: bool,
    /// Statements run by text share the parse and plan of their shape, literals
    /// as parameters (`engine/shape.rs`).
    pub statement_shapes: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            memory_limit: 1 << 30,
            bees: BeeSettings::default(),
            statement_timeout: None,
            optimizer: crate::optimizer::Rules::default(),
            point_path: true,
            statement_shapes: true,
        }
    }
}

/// What `SET` acts on besides the session: the database's store and bee cache.
pub struct SettingTargets<'a> {
    pub store: &'a Store,
    pub bees: &'a BeeCache,
}

fn parse_switch(name: &str, value: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(invalid(name, value)),
    }
}

fn show_switch(b: bool) -> String {
    if b { "on" } else { "off" }.to_string()
}

/// Names `SHOW ALL` lists.
pub const SETTING_NAMES: &[&str] = &[
    "memory_limit",
    "synchronous",
    "writer_timeout",
    "statement_timeout",
    "bees",
    "bee_deform",
    "bee_form",
    "bee_scan",
    "bee_sort",
    "bee_agg",
    "bee_join",
    "bee_maker",
    "bee_code_limit",
    "optimizer_join_order",
    "optimizer_filter_pushdown",
    "optimizer_index_access",
    "optimizer_index_order",
    "optimizer_index_join",
    "optimizer_build_side",
    "optimizer_column_pruning",
    "optimizer_decorrelate",
    "optimizer_reduce_outer_joins",
    "optimizer_magic_set",
    "optimizer_semi_pushdown",
    "optimizer_simplify",
    "optimizer_join_filter",
    "enable_seqscan",
    "enable_indexscan",
    "enable_hashjoin",
    "enable_nestloop",
    "point_path",
    "statement_shapes",
    "threads",
    "parallel_min_rows",
];

fn unknown(name: &str) -> Error {
    Error::semantic(
        "42704",
        format!("unrecognized configuration parameter \"{name}\""),
    )
}

fn invalid(name: &str, value: &str) -> Error {
    Error::data(
        "22023",
        format!("invalid value for parameter \"{name}\": \"{value}\""),
    )
}

/// Parses `1024`, `64kB`, `256MB`, `1GB` (PostgreSQL's memory units, base 1024).
pub fn parse_bytes(text: &str) -> Option<usize> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num.parse().ok()?;
    let mult: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1 << 10,
        "mb" => 1 << 20,
        "gb" => 1 << 30,
        "tb" => 1 << 40,
        _ => return None,
    };
    n.checked_mul(mult)
}

fn format_bytes(n: usize) -> String {
    for (unit, size) in [("GB", 1usize << 30), ("MB", 1 << 20), ("kB", 1 << 10)] {
        if n >= size && n.is_multiple_of(size) {
            return format!("{}{unit}", n / size);
        }
    }
    format!("{n}B")
}

fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().ok()?;
    match unit.trim() {
        "" | "ms" => Some(Duration::from_millis(n)),
        "s" => Some(Duration::from_secs(n)),
        "min" => Some(Duration::from_secs(n.checked_mul(60)?)),
        _ => None,
    }
}

impl Settings {
    pub fn set(&mut self, name: &str, value: &str, t: &SettingTargets<'_>) -> Result<()> {
        let store = t.store;
        let lname = name.to_ascii_lowercase();
        match lname.as_str() {
            "memory_limit" => {
                let n = parse_bytes(value).filter(|&n| n >= 1 << 16);
                self.memory_limit = n.ok_or_else(|| invalid(name, value))?;
            }
            "synchronous" => {
                let mode: Synchronous = value
                    .to_ascii_lowercase()
                    .parse()
                    .map_err(|_| invalid(name, value))?;
                store.set_synchronous(mode);
            }
            "writer_timeout" => {
                let d = parse_duration(value).ok_or_else(|| invalid(name, value))?;
                store.set_writer_timeout(d);
            }
            "statement_timeout" => {
                let d = parse_duration(value).ok_or_else(|| invalid(name, value))?;
                self.statement_timeout = (!d.is_zero()).then_some(d);
            }
            "bees" => self.bees.enabled = parse_switch(name, value)?,
            "bee_deform" => self.bees.deform = parse_switch(name, value)?,
            "bee_form" => self.bees.form = parse_switch(name, value)?,
            "bee_scan" => self.bees.scan = parse_switch(name, value)?,
            "bee_sort" => self.bees.sort = parse_switch(name, value)?,
            "bee_agg" => self.bees.agg = parse_switch(name, value)?,
            "bee_join" => self.bees.join = parse_switch(name, value)?,
            "bee_maker" => {
                self.bees.maker = value.parse().map_err(|_| invalid(name, value))?;
            }
            "bee_code_limit" => {
                let n = parse_bytes(value).ok_or_else(|| invalid(name, value))?;
                t.bees.set_code_limit(n);
            }
            "optimizer_join_order" => self.optimizer.join_order = parse_switch(name, value)?,
            "optimizer_filter_pushdown" => self.optimizer.filter_pushdown = parse_switch(name, value)?,
            "optimizer_index_access" => self.optimizer.index_access = parse_switch(name, value)?,
            "optimizer_index_order" => self.optimizer.index_order = parse_switch(name, value)?,
            "optimizer_index_join" => self.optimizer.index_join = parse_switch(name, value)?,
            "optimizer_build_side" => self.optimizer.build_side = parse_switch(name, value)?,
            "optimizer_column_pruning" => self.optimizer.column_pruning = parse_switch(name, value)?,
            "optimizer_decorrelate" => self.optimizer.decorrelate = parse_switch(name, value)?,
            "optimizer_reduce_outer_joins" => self.optimizer.reduce_outer_joins = parse_switch(name, value)?,
            "optimizer_magic_set" => self.optimizer.magic_set = parse_switch(name, value)?,
            "optimizer_semi_pushdown" => self.optimizer.semi_pushdown = parse_switch(name, value)?,
            "optimizer_simplify" => self.optimizer.simplify = parse_switch(name, value)?,
            "optimizer_join_filter" => self.optimizer.join_filter = parse_switch(name, value)?,
            "enable_seqscan" => self.optimizer.methods.seqscan = parse_switch(name, value)?,
            "enable_indexscan" => self.optimizer.methods.indexscan = parse_switch(name, value)?,
            "enable_hashjoin" => self.optimizer.methods.hashjoin = parse_switch(name, value)?,
            "enable_nestloop" => self.optimizer.methods.nestloop = parse_switch(name, value)?,
            "point_path" => self.point_path = parse_switch(name, value)?,
            "statement_shapes" => self.statement_shapes = parse_switch(name, value)?,
            "threads" => {
                let n = value.trim().parse::<usize>().ok().filter(|n| (1..=crate::optimizer::MAX_THREADS).contains(n));
                self.optimizer.threads = n.ok_or_else(|| invalid(name, value))?;
            }
            "parallel_min_rows" => {
                self.optimizer.parallel_min_rows = value.trim().parse().map_err(|_| invalid(name, value))?;
            }
            _ => return Err(unknown(name)),
        }
        Ok(())
    }

    pub fn reset(&mut self, name: &str, t: &SettingTargets<'_>) -> Result<()> {
        let value = match name.to_ascii_lowercase().as_str() {
            "memory_limit" => "1GB",
            "synchronous" => "full",
            "writer_timeout" => "5s",
            "statement_timeout" => "0",
            "bees" | "bee_deform" | "bee_form" | "bee_scan" | "bee_sort" | "bee_agg" | "bee_join" => "on",
            "bee_maker" => "auto",
            "bee_code_limit" => "64MB",
            "optimizer_join_order" | "optimizer_filter_pushdown" | "optimizer_index_access" | "optimizer_index_order" | "optimizer_index_join" | "optimizer_build_side"
            | "optimizer_column_pruning" => "on",
            "optimizer_decorrelate" | "optimizer_reduce_outer_joins" | "optimizer_magic_set" | "optimizer_semi_pushdown" | "optimizer_simplify" | "optimizer_join_filter" => "on",
            "enable_seqscan" | "enable_indexscan" | "enable_hashjoin" | "enable_nestloop" => "on",
            "point_path" | "statement_shapes" => "on",
            "threads" => {
                self.optimizer.threads = crate::optimizer::default_threads();
                return Ok(());
            }
            "parallel_min_rows" => {
                self.optimizer.parallel_min_rows = crate::optimizer::DEFAULT_PARALLEL_MIN_ROWS;
                return Ok(());
            }
            _ => return Err(unknown(name)),
        };
        self.set(name, value, t)
    }

    pub fn show(&self, name: &str, t: &SettingTargets<'_>) -> Result<String> {
        let store = t.store;
        Ok(match name.to_ascii_lowercase().as_str() {
            "memory_limit" => format_bytes(self.memory_limit),
            "synchronous" => match store.synchronous() {
                Synchronous::Off => "off",
                Synchronous::Normal => "normal",
                Synchronous::Full => "full",
            }
            .to_string(),
            "writer_timeout" => format!("{}ms", store.writer_timeout().as_millis()),
            // As PostgreSQL shows it: the largest unit that divides it.
            "statement_timeout" => match self.statement_timeout.map(|d| d.as_millis()) {
                None => "0".to_string(),
                Some(ms) if ms % 60_000 == 0 => format!("{}min", ms / 60_000),
                Some(ms) if ms % 1000 == 0 => format!("{}s", ms / 1000),
                Some(ms) => format!("{ms}ms"),
            },
            "bees" => show_switch(self.bees.enabled),
            "bee_deform" => show_switch(self.bees.deform),
            "bee_form" => show_switch(self.bees.form),
            "bee_scan" => show_switch(self.bees.scan),
            "bee_sort" => show_switch(self.bees.sort),
            "bee_agg" => show_switch(self.bees.agg),
            "bee_join" => show_switch(self.bees.join),
            "bee_maker" => self.bees.maker.to_string(),
            "bee_code_limit" => format_bytes(t.bees.code_limit()),
            "optimizer_join_order" => show_switch(self.optimizer.join_order),
            "optimizer_filter_pushdown" => show_switch(self.optimizer.filter_pushdown),
            "optimizer_index_access" => show_switch(self.optimizer.index_access),
            "optimizer_index_order" => show_switch(self.optimizer.index_order),
            "optimizer_index_join" => show_switch(self.optimizer.index_join),
            "optimizer_build_side" => show_switch(self.optimizer.build_side),
            "optimizer_column_pruning" => show_switch(self.optimizer.column_pruning),
            "optimizer_decorrelate" => show_switch(self.optimizer.decorrelate),
            "optimizer_reduce_outer_joins" => show_switch(self.optimizer.reduce_outer_joins),
            "optimizer_magic_set" => show_switch(self.optimizer.magic_set),
            "optimizer_semi_pushdown" => show_switch(self.optimizer.semi_pushdown),
            "optimizer_simplify" => show_switch(self.optimizer.simplify),
            "optimizer_join_filter" => show_switch(self.optimizer.join_filter),
            "enable_seqscan" => show_switch(self.optimizer.methods.seqscan),
            "enable_indexscan" => show_switch(self.optimizer.methods.indexscan),
            "enable_hashjoin" => show_switch(self.optimizer.methods.hashjoin),
            "enable_nestloop" => show_switch(self.optimizer.methods.nestloop),
            "point_path" => show_switch(self.point_path),
            "statement_shapes" => show_switch(self.statement_shapes),
            "threads" => self.optimizer.threads.to_string(),
            "parallel_min_rows" => self.optimizer.parallel_min_rows.to_string(),
            _ => return Err(unknown(name)),
        })
    }
}
