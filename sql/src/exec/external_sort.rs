//! An external sort of index entries — (key bytes, tuple id) — for CREATE INDEX,
//! within `memory_limit` (issue 16).
//!
//! Entries gather in a run in memory; when the run reaches half the limit it is
//! sorted and written to a temporary file, and a new run starts. At the end the runs
//! are merged k ways, through a read buffer per run sized so that the buffers
//! together also stay within half the limit, and come out in (key, tuple id) order:
//! the order the B+tree wants them in, and the order that puts equal keys next to
//! each other for the unique check. When everything fits in one run nothing is
//! written and the run is sorted in place.
//!
//! The temporary file is created in the system's temporary directory and unlinked
//! at once, so it disappears with the statement whatever happens (a crash
//! included). It is not the database's WAL, where a writer spills its private
//! pages: sorted runs are scratch, never part of a transaction.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::error::{Error, Result};

/// A tuple id as the index stores it (`TupleId::to_bytes`).
pub type TidBytes = [u8; 6];

/// One index entry.
pub type Entry = (Vec<u8>, TidBytes);

/// Bytes an entry costs in a run beyond its key: the key's `Vec` header, the tuple
/// id, and the allocator's rounding of the key's buffer.
const ENTRY_OVERHEAD_BYTES: usize = 24 + 8 + 16;

/// Smallest and largest read buffer of one run while merging.
const MERGE_BUFFER_BYTES_MIN: usize = 4 << 10;
const MERGE_BUFFER_BYTES_MAX: usize = 256 << 10;

/// Sorts index entries within a memory budget, spilling sorted runs to a file.
pub struct EntrySorter {
    run: Vec<Entry>,
    run_bytes: usize,
    /// A run is spilled when it holds this many bytes (half of `memory_limit`).
    run_bytes_max: usize,
    memory_limit: usize,
    spill: Option<SpillFile>,
}

/// The temporary file and where each sorted run lies in it.
struct SpillFile {
    file: File,
    /// `(start, end)` byte offsets of each run.
    runs: Vec<(u64, u64)>,
    len: u64,
}

impl SpillFile {
    fn create() -> Result<SpillFile> {
        let file = super::spill::unlinked_temp_file("beedb-index-sort")?;
        Ok(SpillFile { file, runs: Vec::new(), len: 0 })
    }

    /// Appends a sorted run: each entry as its key's length (u32, little-endian), the
    /// key, then the tuple id.
    fn write_run(&mut self, run: &[Entry]) -> Result<()> {
        let start = self.len;
        let mut buf = Vec::with_capacity(1 << 20);
        for (key, tid) in run {
            let len = u32::try_from(key.len()).map_err(|_| Error::internal("an index key over 4 GB"))?;
            buf.extend_from_slice(&len.to_le_bytes());
            buf.extend_from_slice(key);
            buf.extend_from_slice(tid);
            if buf.len() >= 1 << 20 {
                self.write(&buf)?;
                buf.clear();
            }
        }
        self.write(&buf)?;
        self.runs.push((start, self.len));
        Ok(())
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all_at(bytes, self.len)
            .map_err(|e| Error::io(format!("could not write to a temporary file of CREATE INDEX: {e}")))?;
        self.len += bytes.len() as u64;
        Ok(())
    }
}

impl EntrySorter {
    pub fn new(memory_limit: usize) -> EntrySorter {
        EntrySorter {
            run: Vec::new(),
            run_bytes: 0,
            run_bytes_max: (memory_limit / 2).max(64 << 10),
            memory_limit,
            spill: None,
        }
    }

    pub fn push(&mut self, key: Vec<u8>, tid: TidBytes) -> Result<()> {
        self.run_bytes += key.len() + ENTRY_OVERHEAD_BYTES;
        self.run.push((key, tid));
        if self.run_bytes >= self.run_bytes_max {
            self.spill_run()?;
        }
        Ok(())
    }

    fn spill_run(&mut self) -> Result<()> {
        if self.spill.is_none() {
            self.spill = Some(SpillFile::create()?);
        }
        self.run.sort_unstable();
        let spill = self.spill.as_mut().expect("created above");
        spill.write_run(&self.run)?;
        // The run's memory goes back, not only its entries: the next run starts small.
        self.run = Vec::new();
        self.run_bytes = 0;
        Ok(())
    }

    /// Whether any run went to the temporary file (for tests).
    #[cfg(test)]
    pub fn spilled(&self) -> bool {
        self.spill.is_some()
    }

    /// The entries in (key, tuple id) order.
    pub fn finish(mut self) -> Result<SortedEntries> {
        let Some(_) = &self.spill else {
            self.run.sort_unstable();
            return Ok(SortedEntries::Memory(self.run.into_iter()));
        };
        if !self.run.is_empty() {
            self.spill_run()?;
        }
        let spill = self.spill.take().expect("checked above");
        let buffer = (self.memory_limit / 2 / spill.runs.len().max(1))
            .clamp(MERGE_BUFFER_BYTES_MIN, MERGE_BUFFER_BYTES_MAX);
        let mut readers: Vec<RunReader> = spill
            .runs
            .iter()
            .map(|&(start, end)| RunReader { next: start, end, buf: Vec::with_capacity(buffer), at: 0, buffer })
            .collect();
        let mut heads = BinaryHeap::with_capacity(readers.len());
        for (i, r) in readers.iter_mut().enumerate() {
            if let Some((key, tid)) = r.next_entry(&spill.file)? {
                heads.push(Reverse((key, tid, i)));
            }
        }
        Ok(SortedEntries::Merge { file: spill.file, readers, heads })
    }
}

/// Reads one sorted run back through a buffer of its own.
pub struct RunReader {
    /// File offset of the first byte not yet in `buf`.
    next: u64,
    end: u64,
    buf: Vec<u8>,
    /// The first unread byte of `buf`.
    at: usize,
    buffer: usize,
}

impl RunReader {
    /// Makes `n` unread bytes available in `buf`; `false` at the end of the run.
    fn fill(&mut self, file: &File, n: usize) -> Result<bool> {
        if self.buf.len() - self.at >= n {
            return Ok(true);
        }
        self.buf.drain(..self.at);
        self.at = 0;
        let want = (n - self.buf.len()).max(self.buffer - self.buf.len().min(self.buffer));
        let take = want.min((self.end - self.next) as usize);
        if self.buf.len() + take < n {
            if self.buf.is_empty() && take == 0 {
                return Ok(false);
            }
            return Err(Error::internal("a sorted run of CREATE INDEX ends inside an entry"));
        }
        let old = self.buf.len();
        self.buf.resize(old + take, 0);
        file.read_exact_at(&mut self.buf[old..], self.next)
            .map_err(|e| Error::io(format!("could not read a temporary file of CREATE INDEX: {e}")))?;
        self.next += take as u64;
        Ok(true)
    }

    fn next_entry(&mut self, file: &File) -> Result<Option<Entry>> {
        if !self.fill(file, 4)? {
            return Ok(None);
        }
        let len = u32::from_le_bytes(self.buf[self.at..self.at + 4].try_into().expect("4 bytes")) as usize;
        self.at += 4;
        if !self.fill(file, len + 6)? {
            return Err(Error::internal("a sorted run of CREATE INDEX ends inside an entry"));
        }
        let key = self.buf[self.at..self.at + len].to_vec();
        let tid: TidBytes = self.buf[self.at + len..self.at + len + 6].try_into().expect("6 bytes");
        self.at += len + 6;
        Ok(Some((key, tid)))
    }
}

/// The sorted entries: a run held in memory, or a merge of the runs on file.
pub enum SortedEntries {
    Memory(std::vec::IntoIter<Entry>),
    Merge {
        file: File,
        readers: Vec<RunReader>,
        /// The smallest unread entry of each run not yet finished, with its run.
        heads: BinaryHeap<Reverse<(Vec<u8>, TidBytes, usize)>>,
    },
}

impl SortedEntries {
    pub fn next_entry(&mut self) -> Result<Option<Entry>> {
        match self {
            SortedEntries::Memory(entries) => Ok(entries.next()),
            SortedEntries::Merge { file, readers, heads } => {
                let Some(Reverse((key, tid, run))) = heads.pop() else {
                    return Ok(None);
                };
                if let Some((k, t)) = readers[run].next_entry(file)? {
                    heads.push(Reverse((k, t, run)));
                }
                Ok(Some((key, tid)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries of pseudo-random keys, some repeated, merged from many spilled runs,
    /// come out as a sort in memory gives them.
    #[test]
    fn spilled_runs_merge_in_order() {
        let mut x: u64 = 7;
        let mut all = Vec::new();
        let mut sorter = EntrySorter::new(64 << 10);
        for i in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = format!("k{}", x % 5000).into_bytes();
            let tid: TidBytes = [0, 0, (i >> 8) as u8, i as u8, 0, (i % 7) as u8];
            all.push((key.clone(), tid));
            sorter.push(key, tid).unwrap();
        }
        assert!(sorter.spilled());
        let mut sorted = sorter.finish().unwrap();
        let mut got = Vec::new();
        while let Some(e) = sorted.next_entry().unwrap() {
            got.push(e);
        }
        all.sort();
        assert_eq!(got, all);
    }
}
