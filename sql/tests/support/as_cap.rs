//! Runs one step of a test under an address-space cap (issue 16: "RSS bounded by
//! `memory_limit` plus a documented constant, measured with an address-space cap").
//!
//! [`in_capped_child`] runs the calling test again, alone, in a child process (the
//! test binary with `--exact <test>`) with `BEEDB_AS_CAP_CHILD` set and
//! `MALLOC_ARENA_MAX=2` (glibc reserves 64 MiB of address space per malloc arena, one
//! per thread up to 8 × cores; two keep that reservation small and fixed). In the
//! child, [`Cap::step`] lowers the soft `RLIMIT_AS` to
//!
//!   the address space in use when the step starts (`VmSize`)
//!   + 3 × the step's `memory_limit`
//!   + [`SLACK_BYTES`],
//!
//! runs the step, and raises the limit again. A step that needs more than that
//! cannot get it: an allocation fails and the process aborts ("memory allocation of N
//! bytes failed", SIGABRT), which the parent reports as a failure with the child's
//! output. So the cap proves what the issue asks: nothing the statement does takes
//! the process past 3 × `memory_limit` plus the constant, whatever the timing. The
//! cap counts address space, not resident memory, so it is an upper bound on RSS.
//!
//! Linux only (the rlimit constant is Linux's); elsewhere the step runs uncapped.

#![allow(dead_code)]

/// Address space a step may take beyond 3 × `memory_limit`, and what it is for:
/// - the page cache: up to 8 MiB in the tests' small-cache databases (the default is
///   a quarter of RAM, at least 256 MiB, so capped tests use `small_cache_database`
///   or `:memory:` with small tables);
/// - the guarded stack's segments (`sql/src/stack.rs`: 4 MiB each, reserved as the
///   recursion goes deeper) and the 64 MiB segment a statement nested more than 40
///   levels is parsed on;
/// - a second malloc arena (64 MiB reserved) for a thread that starts during the
///   step, and thread stacks (2 MiB each) of a stream's producer or parallel workers;
/// - the bee module's code memory (the JIT maps its pages as it compiles);
/// - temporary-file buffers, the WAL's frame index, and the allocator's rounding.
///
/// 256 MiB: measured, the steps below take at most about 100 MiB of it at a 50 MB
/// limit (the rest is headroom for a noisy machine, not for growth with the data).
pub const SLACK_BYTES: u64 = 256 << 20;

/// The environment variable that marks the child.
const CHILD: &str = "BEEDB_AS_CAP_CHILD";

/// Whether this process is the capped child.
pub fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// In the parent: runs `test` (a test of the current binary) alone in a child under
/// the cap and asserts that it passed. In the child: runs `body`.
pub fn in_capped_child(test: &str, body: impl FnOnce(&mut Cap)) {
    if !is_child() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test, "--nocapture", "--test-threads", "1", "--include-ignored"])
            .env(CHILD, "1")
            .env("MALLOC_ARENA_MAX", "2")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stdout.contains("capped steps passed:"),
            "the capped child of {test} failed ({}):\n{stdout}\n{stderr}",
            out.status
        );
        for line in stdout.lines().chain(stderr.lines()).filter(|l| l.contains("cap:")) {
            eprintln!("{line}");
        }
        return;
    }
    let mut cap = Cap { steps: 0 };
    body(&mut cap);
    assert!(cap.steps > 0, "the test capped no step");
    println!("capped steps passed: {}", cap.steps);
}

/// The child's handle for capped steps.
pub struct Cap {
    steps: usize,
}

impl Cap {
    /// Runs `step` with the address space capped at what is in use now plus
    /// 3 × `memory_limit` plus [`SLACK_BYTES`]. `what` names the step in the output.
    pub fn step<T>(&mut self, what: &str, memory_limit: u64, step: impl FnOnce() -> T) -> T {
        let base = vm_size_bytes();
        let limit = base + 3 * memory_limit + SLACK_BYTES;
        // Resets the peak resident set (VmHWM) so that the step's own peak is shown.
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        let rss = status_kb("VmRSS:") * 1024;
        set_as_limit(Some(limit));
        let out = step();
        let end = vm_size_bytes();
        set_as_limit(None);
        let hwm = status_kb("VmHWM:") * 1024;
        self.steps += 1;
        println!(
            "cap: {what}: address space {} MiB at the start, cap {} MiB (+3 x {} MiB + {} MiB), {} MiB at the end; RSS {} MiB at the start, peak {} MiB",
            base >> 20,
            limit >> 20,
            memory_limit >> 20,
            SLACK_BYTES >> 20,
            end >> 20,
            rss >> 20,
            hwm >> 20
        );
        out
    }
}

fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The address space this process has mapped now (`VmSize`).
pub fn vm_size_bytes() -> u64 {
    status_kb("VmSize:") * 1024
}


#[cfg(target_os = "linux")]
fn set_as_limit(soft: Option<u64>) {
    #[repr(C)]
    struct RLimit {
        cur: u64,
        max: u64,
    }
    unsafe extern "C" {
        fn getrlimit(resource: i32, rlim: *mut RLimit) -> i32;
        fn setrlimit(resource: i32, rlim: *const RLimit) -> i32;
    }
    const RLIMIT_AS: i32 = 9;
    let mut cur = RLimit { cur: 0, max: 0 };
    // SAFETY: plain system calls on a local struct of the kernel's layout (two
    // `rlim_t`, 64-bit on Linux).
    unsafe {
        assert_eq!(getrlimit(RLIMIT_AS, &mut cur), 0);
        let new = RLimit { cur: soft.unwrap_or(cur.max).min(cur.max), max: cur.max };
        assert_eq!(setrlimit(RLIMIT_AS, &new), 0, "setrlimit(RLIMIT_AS)");
    }
}

#[cfg(not(target_os = "linux"))]
fn set_as_limit(_soft: Option<u64>) {}
