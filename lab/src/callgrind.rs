//! `--callgrind QUERY`: instructions executed by one Wisconsin query with bees on and
//! off, counted by valgrind's callgrind. Instruction counts repeat exactly for the
//! same binary and input whatever else the machine is doing, which timings on a
//! shared machine do not.
//!
//! The lab builds the query's database once, then runs `beedb bench
//! __callgrind-child DB on|off SQL` under valgrind on a copy of it per mode. Only
//! [`lab_callgrind_measured_statement`] is counted (`--toggle-collect`): opening the
//! database is not, and a bee's compile is, because the query pays for it.

use std::path::Path;
use std::process::{Command, ExitCode};

use crate::bench::Ctx;
use crate::engine::beedb::{BeedbEngine, cell};
use crate::engine::{Engine, EngineKind};
use crate::report::{EngineInfo, Measurement, Report};
use crate::workload::wisconsin;

/// The hidden subcommand valgrind runs.
pub const CHILD_COMMAND: &str = "__callgrind-child";

/// Runs one statement; the only function whose instructions are counted.
#[inline(never)]
pub fn lab_callgrind_measured_statement(
    conn: &mut beedb_sql::Connection,
    sql: &str,
) -> beedb_sql::Result<beedb_sql::QueryResult> {
    conn.execute(sql, &[])
}

/// `__callgrind-child DB on|off SQL`: prints the answer's row count and a checksum.
pub fn child_main(args: &[String]) -> ExitCode {
    let [db, mode, sql] = args else {
        eprintln!("usage: beedb bench {CHILD_COMMAND} DB on|off SQL");
        return ExitCode::from(2);
    };
    let result = (|| {
        let mut engine = BeedbEngine::open(Path::new(db), mode == "on").map_err(|e| e.to_string())?;
        let result = lab_callgrind_measured_statement(engine.connection(), sql).map_err(|e| e.message)?;
        let mut rows: Vec<String> =
            result.rows.iter().map(|r| r.values().iter().map(|v| cell(v).to_string()).collect::<Vec<_>>().join("|")).collect();
        rows.sort();
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        for b in rows.join("\n").bytes() {
            hash = (hash ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
        Ok::<_, String>(format!("answer {} rows {} affected {hash:016x}", rows.len(), result.rows_affected))
    })();
    match result {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("beedb bench {CHILD_COMMAND}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Parses callgrind's output file for the total instruction count.
pub fn total_instructions(callgrind_out: &str) -> Option<u64> {
    callgrind_out
        .lines()
        .find_map(|l| l.strip_prefix("summary:").or_else(|| l.strip_prefix("totals:")))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

pub fn run(ctx: &mut Ctx, n: usize, query: &str, seed: u64) -> Result<Report, String> {
    let number: u32 = query
        .trim_start_matches(['q', 'Q'])
        .parse()
        .map_err(|_| format!("--callgrind wants a Wisconsin query, q1 … q32, not \"{query}\""))?;
    let queries = wisconsin::queries();
    let q = queries
        .iter()
        .find(|q| q.number == number)
        .ok_or_else(|| format!("there is no Wisconsin query {number} (q1 … q32)"))?;
    let valgrind = Command::new("valgrind").arg("--version").output();
    if !valgrind.as_ref().is_ok_and(|o| o.status.success()) {
        return Err("valgrind is not installed (Debian: apt-get install valgrind)".into());
    }
    let exe = std::env::current_exe().map_err(|e| format!("finding this program: {e}"))?;
    let n = n.max(100);
    let data = wisconsin::ensure_data(ctx, n).map_err(|e| e.to_string())?;
    let db = ctx.work.join(format!("callgrind-n{n}.beedb"));
    let _ = std::fs::remove_file(&db);
    let _ = std::fs::remove_file(ctx.work.join(format!("callgrind-n{n}.beedb-wal")));
    {
        let bar = ctx.progress.phase(format!("building the database of q{number}, N = {n}"), 0);
        let mut engine = BeedbEngine::open(&db, true).map_err(|e| e.to_string())?;
        wisconsin::load(&mut engine, &data, n).map_err(|e| e.to_string())?;
        wisconsin::set_config(&mut engine, EngineKind::Beedb, None, q.config).map_err(|e| e.to_string())?;
        engine.bytes_on_disk().map_err(|e| e.to_string())?; // checkpoint
        bar.finish_and_clear();
    }
    let sql = q.statements(n, 0, seed).remove(0);
    let mut results = Vec::new();
    let mut answers = Vec::new();
    for (mode, kind) in [("on", EngineKind::Beedb), ("off", EngineKind::BeedbGeneric)] {
        let bar = ctx.progress.phase(format!("q{number} under callgrind, bees {mode}"), 0);
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let copy = dir.path().join("db.beedb");
        std::fs::copy(&db, &copy).map_err(|e| format!("copying the database: {e}"))?;
        let out_file = dir.path().join("callgrind.out");
        let output = Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg(format!("--callgrind-out-file={}", out_file.display()))
            .arg("--collect-atstart=no")
            .arg("--toggle-collect=*lab_callgrind_measured_statement*")
            .arg(&exe)
            .args(["bench", CHILD_COMMAND])
            .arg(&copy)
            .arg(mode)
            .arg(&sql)
            .output()
            .map_err(|e| format!("running valgrind: {e}"))?;
        bar.finish_and_clear();
        if !output.status.success() {
            return Err(format!("q{number} with bees {mode} failed under valgrind:\n{}", String::from_utf8_lossy(&output.stderr)));
        }
        let text = std::fs::read_to_string(&out_file).map_err(|e| format!("reading callgrind's output: {e}"))?;
        let ir = total_instructions(&text).ok_or("callgrind's output has no total")?;
        answers.push(String::from_utf8_lossy(&output.stdout).trim().to_string());
        results.push(Measurement {
            timed_out: false,
            item: q.item(),
            engine: kind.name().into(),
            value: ir as f64,
            unit: "instructions".into(),
            verified: true,
            runs: Vec::new(),
        });
    }
    if answers[0] != answers[1] {
        ctx.fail(format!("q{number}: bees on answered \"{}\", bees off \"{}\"", answers[0], answers[1]));
        results.iter_mut().for_each(|m| m.verified = false);
    }
    let version = crate::engine::beedb::version();
    Ok(Report {
        workload: "wisconsin-callgrind".into(),
        parameters: vec![("n".into(), n.to_string()), ("query".into(), q.item())],
        machine: crate::machine::describe(),
        engines: vec![
            EngineInfo { name: "beedb".into(), version: format!("{version}, bees on") },
            EngineInfo { name: "beedb-generic".into(), version: format!("{version}, bees off") },
        ],
        results,
        notes: vec![format!("statement: {sql}"), format!("answer: {}", answers[0])],
        items: vec![(q.item(), format!("{} ({})", q.name, q.config.name()))],
        profiles: Vec::new(),
            sections: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn totals_are_read_from_callgrind_output() {
        assert_eq!(super::total_instructions("events: Ir\nsummary: 12345\n"), Some(12345));
        assert_eq!(super::total_instructions("totals: 99 1\n"), Some(99));
        assert_eq!(super::total_instructions("nothing"), None);
    }
}
