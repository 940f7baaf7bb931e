//! A file system for crash and fault-injection tests.
//!
//! Every file keeps two images: what a reader sees now (`current`) and what would
//! survive a power cut (`durable`), plus the list of writes since the last sync. The test
//! can make the Nth write or sync fail, or crash the file system at the Nth operation.
//! After a crash every open handle fails forever (the "process" is dead); then
//! [`FaultFileSystem::restart`] builds the post-crash disk: each unsynced write is
//! dropped, applied, or torn (only some of its 512-byte sectors reach the disk), in a
//! random order. All randomness comes from a seed so any failure replays exactly.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::mem::{read_from, write_into};
use super::{FileSystem, OpenOptions, StorageFile};

/// Sector size assumed for torn writes: a torn write persists whole sectors only.
const SECTOR_BYTES: usize = 512;

/// Faults to inject. Operation numbers count every write, sync and set_len across all
/// files, starting at 1.
#[derive(Clone, Debug, Default)]
pub struct FaultConfig {
    /// Fail this write (an I/O error, nothing written); later writes succeed.
    pub fail_write_at: Option<u64>,
    /// Fail this sync (an I/O error, nothing made durable); later syncs succeed.
    pub fail_sync_at: Option<u64>,
    /// Crash when this operation is attempted: it and every later operation fail.
    pub crash_at_op: Option<u64>,
    /// Make every sync take at least this long, like a slow disk (group-commit tests).
    pub sync_delay: Option<std::time::Duration>,
    /// A full disk: every write and every change of a file's length fails with
    /// `StorageFull` ("No space left on device"); reads and syncs succeed.
    pub disk_full: bool,
}

/// What [`FaultFileSystem::restart`] did to the unsynced writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashOutcome {
    pub dropped: usize,
    pub applied: usize,
    pub torn: usize,
}

#[derive(Clone, Debug)]
enum PendingOp {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

#[derive(Default)]
struct SimFile {
    durable: Vec<u8>,
    current: Vec<u8>,
    pending: Vec<PendingOp>,
}

#[derive(Default)]
struct FaultState {
    files: HashMap<PathBuf, Arc<Mutex<SimFile>>>,
    locked: HashSet<PathBuf>,
    config: FaultConfig,
    ops: u64,
    crashed: bool,
    /// Bumped at each restart: handles from before the crash stay dead.
    epoch: u64,
}

/// See the module documentation.
#[derive(Clone, Default)]
pub struct FaultFileSystem {
    state: Arc<Mutex<FaultState>>,
}

impl FaultFileSystem {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set_config(&self, config: FaultConfig) {
        self.state.lock().config = config;
    }

    /// Operations (writes, syncs, set_lens) attempted so far.
    pub fn operation_count(&self) -> u64 {
        self.state.lock().ops
    }

    /// Crashes now: every handle fails from here on.
    pub fn crash(&self) {
        self.state.lock().crashed = true;
    }

    pub fn is_crashed(&self) -> bool {
        self.state.lock().crashed
    }

    /// Builds the disk as it would be after the crash and "reboots": unsynced writes are
    /// dropped, applied or torn in a random order chosen by `seed`; faults are cleared,
    /// locks released, and old handles stay dead. Also valid without a prior crash (a
    /// power cut at this instant).
    pub fn restart(&self, seed: u64) -> CrashOutcome {
        let mut rng = SplitMix64(seed);
        let mut st = self.state.lock();
        let mut outcome = CrashOutcome::default();
        let mut paths: Vec<PathBuf> = st.files.keys().cloned().collect();
        paths.sort(); // HashMap order is not reproducible; the seed must be.
        for path in paths {
            let file = st.files[&path].clone();
            let mut f = file.lock();
            let mut ops = std::mem::take(&mut f.pending);
            // Fisher–Yates with our seeded generator: unsynced writes reach the disk
            // in any order.
            for i in (1..ops.len()).rev() {
                let j = (rng.next() % (i as u64 + 1)) as usize;
                ops.swap(i, j);
            }
            let mut disk = std::mem::take(&mut f.durable);
            for op in ops {
                match op {
                    PendingOp::SetLen(len) => {
                        if rng.next().is_multiple_of(2) {
                            disk.resize(len as usize, 0);
                            outcome.applied += 1;
                        } else {
                            outcome.dropped += 1;
                        }
                    }
                    PendingOp::Write { offset, data } => match rng.next() % 3 {
                        0 => outcome.dropped += 1,
                        1 => {
                            write_into(&mut disk, &data, offset);
                            outcome.applied += 1;
                        }
                        _ => {
                            outcome.torn += 1;
                            // Sector boundaries are absolute file offsets.
                            let mut pos = 0usize;
                            while pos < data.len() {
                                let abs = offset as usize + pos;
                                let sector_end = (abs / SECTOR_BYTES + 1) * SECTOR_BYTES;
                                let n = (sector_end - abs).min(data.len() - pos);
                                if rng.next().is_multiple_of(2) {
                                    write_into(&mut disk, &data[pos..pos + n], abs as u64);
                                }
                                pos += n;
                            }
                        }
                    },
                }
            }
            f.current = disk.clone();
            f.durable = disk;
        }
        st.crashed = false;
        st.config = FaultConfig::default();
        st.locked.clear();
        st.epoch += 1;
        outcome
    }

    /// The bytes a reader would see now (for corrupting files in tests).
    pub fn file_bytes(&self, path: &Path) -> Option<Vec<u8>> {
        let st = self.state.lock();
        st.files.get(path).map(|f| f.lock().current.clone())
    }

    /// Replaces a file's contents, durable at once (for corrupting files in tests).
    pub fn set_file_bytes(&self, path: &Path, bytes: Vec<u8>) {
        let mut st = self.state.lock();
        let f = st.files.entry(path.to_path_buf()).or_default().clone();
        let mut f = f.lock();
        f.current = bytes.clone();
        f.durable = bytes;
        f.pending.clear();
    }
}

/// A small deterministic generator so the file layer needs no `rand` dependency.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

struct FaultFile {
    fs: FaultFileSystem,
    file: Arc<Mutex<SimFile>>,
    path: PathBuf,
    epoch: u64,
    locked: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum OpKind {
    Read,
    Write,
    Sync,
    SetLen,
}

fn crashed_error() -> io::Error {
    io::Error::other("simulated crash: the file system is down")
}

impl FaultFile {
    /// Counts the operation and decides whether it fails.
    fn admit(&self, kind: OpKind) -> io::Result<()> {
        let mut st = self.fs.state.lock();
        if st.crashed || st.epoch != self.epoch {
            return Err(crashed_error());
        }
        if kind == OpKind::Read {
            return Ok(());
        }
        st.ops += 1;
        let n = st.ops;
        if st.config.crash_at_op == Some(n) {
            st.crashed = true;
            return Err(crashed_error());
        }
        if matches!(kind, OpKind::Write | OpKind::SetLen) && st.config.disk_full {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "no space left on device (injected)"));
        }
        if kind == OpKind::Write && st.config.fail_write_at == Some(n) {
            return Err(io::Error::other(format!("injected failure of write #{n}")));
        }
        if kind == OpKind::Sync && st.config.fail_sync_at == Some(n) {
            return Err(io::Error::other(format!("injected failure of sync #{n}")));
        }
        Ok(())
    }
}

impl Drop for FaultFile {
    fn drop(&mut self) {
        if self.locked {
            let mut st = self.fs.state.lock();
            if st.epoch == self.epoch {
                st.locked.remove(&self.path);
            }
        }
    }
}

impl StorageFile for FaultFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.admit(OpKind::Read)?;
        Ok(read_from(&self.file.lock().current, buf, offset))
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.admit(OpKind::Write)?;
        let mut f = self.file.lock();
        write_into(&mut f.current, buf, offset);
        f.pending.push(PendingOp::Write {
            offset,
            data: buf.to_vec(),
        });
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.admit(OpKind::Sync)?;
        let delay = self.fs.state.lock().config.sync_delay;
        if let Some(d) = delay {
            std::thread::sleep(d);
        }
        let mut f = self.file.lock();
        f.durable = f.current.clone();
        f.pending.clear();
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        self.admit(OpKind::Read)?;
        Ok(self.file.lock().current.len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.admit(OpKind::SetLen)?;
        let mut f = self.file.lock();
        f.current.resize(len as usize, 0);
        f.pending.push(PendingOp::SetLen(len));
        Ok(())
    }
}

impl FileSystem for FaultFileSystem {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Arc<dyn StorageFile>> {
        let mut st = self.state.lock();
        if st.crashed {
            return Err(crashed_error());
        }
        let file = match st.files.get(path) {
            Some(f) => f.clone(),
            None if options.create => {
                let f = Arc::new(Mutex::new(SimFile::default()));
                st.files.insert(path.to_path_buf(), f.clone());
                f
            }
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{} not found", path.display()),
                ));
            }
        };
        if options.lock_exclusive && !st.locked.insert(path.to_path_buf()) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is locked", path.display()),
            ));
        }
        Ok(Arc::new(FaultFile {
            fs: self.clone(),
            file,
            path: path.to_path_buf(),
            epoch: st.epoch,
            locked: options.lock_exclusive,
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        self.state.lock().files.contains_key(path)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        if st.crashed {
            return Err(crashed_error());
        }
        st.files.remove(path);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RW: OpenOptions = OpenOptions {
        create: true,
        lock_exclusive: false,
    };

    #[test]
    fn synced_writes_survive_restart_and_unsynced_may_not() {
        let fs = FaultFileSystem::new();
        let f = fs.open(Path::new("a"), RW).unwrap();
        f.write_at(b"hello", 0).unwrap();
        f.sync().unwrap();
        f.write_at(b"world", 5).unwrap();
        fs.crash();
        assert!(f.write_at(b"x", 0).is_err(), "handles die with the crash");
        let mut saw_lost = false;
        let mut saw_kept = false;
        for seed in 0..32 {
            let fs2 = FaultFileSystem::new();
            let f = fs2.open(Path::new("a"), RW).unwrap();
            f.write_at(b"hello", 0).unwrap();
            f.sync().unwrap();
            f.write_at(b"world", 5).unwrap();
            fs2.restart(seed);
            let bytes = fs2.file_bytes(Path::new("a")).unwrap();
            assert_eq!(&bytes[..5], b"hello");
            if bytes.len() == 5 {
                saw_lost = true;
            } else if &bytes[5..] == b"world" {
                saw_kept = true;
            }
        }
        assert!(saw_lost && saw_kept);
    }

    #[test]
    fn nth_write_fails_once() {
        let fs = FaultFileSystem::new();
        fs.set_config(FaultConfig {
            fail_write_at: Some(2),
            ..Default::default()
        });
        let f = fs.open(Path::new("a"), RW).unwrap();
        f.write_at(b"1", 0).unwrap();
        assert!(f.write_at(b"2", 1).is_err());
        f.write_at(b"3", 1).unwrap();
        assert_eq!(fs.file_bytes(Path::new("a")).unwrap(), b"13");
    }

    #[test]
    fn crash_at_op_kills_every_later_operation() {
        let fs = FaultFileSystem::new();
        fs.set_config(FaultConfig {
            crash_at_op: Some(2),
            ..Default::default()
        });
        let f = fs.open(Path::new("a"), RW).unwrap();
        f.write_at(b"1", 0).unwrap();
        assert!(f.sync().is_err());
        assert!(f.write_at(b"2", 0).is_err());
        assert!(fs.is_crashed());
    }

    #[test]
    fn torn_write_keeps_whole_sectors_only() {
        for seed in 0..16 {
            let fs = FaultFileSystem::new();
            let f = fs.open(Path::new("a"), RW).unwrap();
            f.write_at(&vec![1u8; 2048], 0).unwrap();
            f.sync().unwrap();
            f.write_at(&vec![2u8; 2048], 0).unwrap();
            fs.restart(seed);
            let bytes = fs.file_bytes(Path::new("a")).unwrap();
            for sector in bytes.chunks(SECTOR_BYTES) {
                assert!(sector.iter().all(|&b| b == sector[0]), "sector mixed");
            }
        }
    }
}
