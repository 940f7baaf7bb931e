//! What one sync costs on this machine's disk: the wait a commit under
//! `synchronous = full` pays (BeeDB's and SQLite's alike: one `fdatasync` of the WAL
//! per commit, or per group of commits).
//!
//! `cargo run --release -p beedb-storage --example sync_cost -- DIR [N] [BYTES]`
//!
//! In a scratch file in DIR (put it on the disk the databases live on), N times
//! (default 1000): write BYTES (default 8192, about a TP1 commit's frames) after the
//! previous write, as a WAL append does, then `fdatasync`; the same with `fsync`; and
//! `fdatasync` after writes that extend the file (a WAL's first generation). Prints the
//! median, the 10th and 90th percentiles and the mean of each, in microseconds. The
//! disk's latency changes from one minute to the next on a shared machine: take it
//! next to the benchmark it explains.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::time::Instant;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(args.get(1).map_or(".", |s| s.as_str()));
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1000).max(1);
    let bytes: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(8192).max(1);
    let path = dir.join(format!("sync-cost-{}.tmp", std::process::id()));
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path)?;
    let buf: Vec<u8> = (0..bytes).map(|i| (i * 31 + 7) as u8).collect();
    let stride = bytes.div_ceil(512) * 512;
    // The WAL is overwritten in place after its first generation: preallocate the
    // region (written and synced once), as a reused WAL file is.
    for i in 0..n {
        file.write_all_at(&buf, (i * stride) as u64)?;
    }
    file.sync_all()?;
    let report = |name: &str, times: &mut Vec<f64>| {
        times.sort_by(f64::total_cmp);
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        println!(
            "{name:<28} median {:8.1} µs   p10 {:8.1}   p90 {:8.1}   mean {:8.1}   (n = {})",
            percentile(times, 0.5),
            percentile(times, 0.1),
            percentile(times, 0.9),
            mean,
            times.len()
        );
    };
    for (name, full) in [("write + fdatasync (reused)", false), ("write + fsync (reused)", true)] {
        let mut times = Vec::with_capacity(n);
        for i in 0..n {
            file.write_all_at(&buf, (i * stride) as u64)?;
            let t = Instant::now();
            if full { file.sync_all()? } else { file.sync_data()? }
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        report(name, &mut times);
    }
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        file.write_all_at(&buf, ((n + i) * stride) as u64)?;
        let t = Instant::now();
        file.sync_data()?;
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    report("write + fdatasync (growing)", &mut times);
    drop(file);
    std::fs::remove_file(&path)
}
