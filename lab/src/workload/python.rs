//! `beedb bench python`: the SQPyte micro-benchmarks (select, innerjoin, pythonjoin,
//! pyfunction, pyaggregate, filltable, and select through the batch path) through
//! Python's DB-API modules — `beedb`, `sqlite3`, `duckdb` — on TPC-H data.
//!
//! The benchmarks are Python code (`lab/python/sqpyte_bench.py`): what they measure is
//! the boundary between Python and each engine, so they run in a Python process. This
//! module prepares what that process needs and runs it: a virtual environment under
//! the output folder with maturin, NumPy, pyarrow and duckdb (from PyPI, once), the
//! `beedb` module built in release mode from this source tree, and the TPC-H `.tbl`
//! files of the scale factor. The script loads every engine from the same files,
//! checks that they agree, and prints the table of medians and ratios.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::bench::Ctx;
use crate::tpch_data;

/// Where this source tree's Python package is (the lab is run from the tree).
fn python_package() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../python")
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("python/sqpyte_bench.py")
}

fn schema() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sql/tpch_schema.sql")
}

fn run_step(what: &str, cmd: &mut Command) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("{what}: cannot start {:?}: {e}", cmd.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// The lab's Python virtual environment under `--out` (`<out>/work/python-venv`),
/// made once with `$PYTHON` (default `python3`): its interpreter. The Python workload
/// and TPC-DS's data generator (`tpcgen-cli`) install what they need into it.
pub fn venv_python(ctx: &Ctx) -> Result<PathBuf, String> {
    let venv = ctx.work.join("python-venv");
    let python = venv.join("bin/python");
    if !python.is_file() {
        let system = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        run_step(
            "creating a Python virtual environment",
            Command::new(system).args(["-m", "venv"]).arg(&venv),
        )?;
    }
    Ok(python)
}

/// `pip install --quiet <requirement>` into the environment of `python`.
pub fn pip_install(python: &Path, requirement: &str) -> Result<(), String> {
    run_step(
        &format!("installing {requirement}"),
        Command::new(python).args(["-m", "pip", "install", "--quiet", requirement]),
    )
}

/// Makes the virtual environment (once) and installs the packages it lacks; then
/// builds and installs the `beedb` module from this tree.
fn prepare_python(ctx: &Ctx) -> Result<PathBuf, String> {
    let python = venv_python(ctx)?;
    let venv = ctx.work.join("python-venv");
    let have = |module: &str| {
        Command::new(&python)
            .args(["-c", &format!("import {module}")])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !have("maturin") {
        pip_install(&python, "maturin>=1.9,<2")?;
    }
    for optional in ["numpy", "pyarrow", "duckdb"] {
        if !have(optional) {
            ctx.progress
                .note(&format!("installing {optional} into {}", venv.display()));
            if pip_install(&python, optional).is_err() {
                ctx.progress.note(&format!(
                    "{optional} could not be installed: what needs it is left out"
                ));
            }
        }
    }
    ctx.progress
        .note("building the beedb Python module (release)");
    let wheels = ctx.work.join("python-wheels");
    let _ = std::fs::remove_dir_all(&wheels);
    run_step(
        "building the beedb module",
        Command::new(venv.join("bin/maturin"))
            .args(["build", "--quiet", "--release", "--manifest-path"])
            .arg(python_package().join("Cargo.toml"))
            .arg("--interpreter")
            .arg(&python)
            .arg("--out")
            .arg(&wheels),
    )?;
    let wheel = std::fs::read_dir(&wheels)
        .map_err(|e| format!("reading {}: {e}", wheels.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or("maturin built no wheel")?;
    run_step(
        "installing the beedb module",
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--force-reinstall",
                "--no-deps",
            ])
            .arg(wheel),
    )?;
    Ok(python)
}

/// Runs the benchmarks at scale factor `sf`; `engines` are the script's names
/// (beedb, beedb-generic, sqlite3, duckdb). Returns whether every answer agreed.
pub fn run(ctx: &mut Ctx, sf: f64, engines: &[String], out: &Path) -> Result<bool, String> {
    let python = prepare_python(ctx)?;
    let dir = ctx.data.join(format!("tpch-sf{sf}"));
    let bar = ctx.progress.phase(
        format!("generating TPC-H SF {sf}"),
        tpch_data::TABLE_NAMES.len() as u64,
    );
    let data = tpch_data::ensure_data_with(&dir, sf, |_| bar.inc(1))
        .map_err(|e| format!("generating TPC-H data: {e}"))?;
    bar.finish_and_clear();
    let results = out.join("results");
    std::fs::create_dir_all(&results)
        .map_err(|e| format!("creating {}: {e}", results.display()))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let json = results.join(format!("python-sf{sf}-{stamp}.json"));
    let status = Command::new(&python)
        .arg(script())
        .arg("--tbl")
        .arg(&data)
        .arg("--schema")
        .arg(schema())
        .arg("--work")
        .arg(&ctx.work)
        .arg("--runs")
        .arg(ctx.runs.to_string())
        .arg("--engines")
        .arg(engines.join(","))
        .arg("--json")
        .arg(&json)
        .status()
        .map_err(|e| format!("running the benchmark script: {e}"))?;
    eprintln!("figures saved in {}", json.display());
    Ok(status.success())
}
