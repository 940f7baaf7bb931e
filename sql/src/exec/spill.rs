//! Temporary files for operators that outgrow `memory_limit` (issue 12, item 4):
//! batches written to a scratch file and read back in order ([`BatchFile`],
//! [`BatchReader`]), and rows split by a hash of their keys into files of their own
//! ([`Partitions`]) so that each part can be processed alone within the limit.
//!
//! A temporary file is created in the system's temporary directory (`TMPDIR`) and
//! unlinked at once: it lives until it is dropped, and nothing is left behind when
//! the statement ends, fails, is cancelled, or the process dies. Its bytes are not
//! the database's: they never reach the WAL and are not part of any transaction.
//!
//! A record is one batch: its payload's length and CRC-32, then the row count and
//! each column's NULL mask and values in the column's physical form (the form the
//! vectors hold, so writing and reading are copies, not conversions). A record
//! whose checksum does not match is reported as an I/O error, never used.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::types::{DataType, Decimal, Interval};
use crate::vector::{BATCH_SIZE, Batch, Data, Dec64Vec, StrVec, Vector};

/// Bytes a file buffers before it writes them (one `pwrite`), and reads at once.
const IO_CHUNK_BYTES: usize = 256 << 10;

/// Number of parts [`Partitions`] splits rows into at each level: 4 bits of the
/// hash. Sixteen parts of a spilled input each need about 1/16 of its memory.
pub(crate) const FANOUT: usize = 16;

/// Levels of partitioning a 64-bit hash allows (4 bits each).
pub(crate) const MAX_LEVELS: u32 = 64 / FANOUT.trailing_zeros();

/// A new file in the system's temporary directory, named `prefix-<pid>-<n>`, and
/// unlinked at once: it lives until it is closed, and nothing is left behind by an
/// error, a cancel or a crash.
pub(crate) fn unlinked_temp_file(prefix: &str) -> Result<File> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = format!("{prefix}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let path = std::env::temp_dir().join(name);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| Error::io(format!("could not create temporary file \"{}\": {e}", path.display())))?;
    std::fs::remove_file(&path)
        .map_err(|e| Error::io(format!("could not remove temporary file \"{}\": {e}", path.display())))?;
    Ok(file)
}

/// An unlinked temporary file, written by appending.
struct ScratchFile {
    file: File,
    len: u64,
}

impl ScratchFile {
    fn create() -> Result<ScratchFile> {
        Ok(ScratchFile { file: unlinked_temp_file("beedb-spill")?, len: 0 })
    }

    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all_at(bytes, self.len)
            .map_err(|e| Error::io(format!("could not write to a temporary file: {e}")))?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    fn read_at(&self, buf: &mut [u8], at: u64) -> Result<()> {
        self.file
            .read_exact_at(buf, at)
            .map_err(|e| Error::io(format!("could not read a temporary file: {e}")))
    }
}

/// Batches of fixed column types written to a temporary file, to be read back in
/// the order written.
pub(crate) struct BatchFile {
    file: ScratchFile,
    types: Vec<DataType>,
    /// Encoded records not yet written.
    pending: Vec<u8>,
    rows: u64,
    /// Bytes buffered before a write, and read at once by the reader.
    chunk: usize,
}

impl BatchFile {
    #[cfg(test)]
    pub(crate) fn create(types: &[DataType]) -> Result<BatchFile> {
        Self::create_with_chunk(types, IO_CHUNK_BYTES)
    }

    /// A file that buffers about `chunk` bytes (rather than [`IO_CHUNK_BYTES`]) before
    /// it writes them, and whose reader reads `chunk` bytes at a time (a record more
    /// when one is larger): for an operator merging many files within a small
    /// memory limit (`sort.rs`).
    pub(crate) fn create_with_chunk(types: &[DataType], chunk: usize) -> Result<BatchFile> {
        Ok(BatchFile { file: ScratchFile::create()?, types: types.to_vec(), pending: Vec::new(), rows: 0, chunk: chunk.max(1) })
    }

    /// Appends the first `n` rows of `cols` (dense vectors of the file's types).
    pub(crate) fn push(&mut self, cols: &[Vector], n: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        debug_assert_eq!(cols.len(), self.types.len());
        let start = self.pending.len();
        self.pending.extend_from_slice(&[0; 8]);
        encode_batch(cols, n, &mut self.pending)?;
        let payload = &self.pending[start + 8..];
        let len = u32::try_from(payload.len()).map_err(|_| Error::internal("a spilled batch over 4 GB"))?;
        let crc = crc32fast::hash(payload);
        self.pending[start..start + 4].copy_from_slice(&len.to_le_bytes());
        self.pending[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
        self.rows += n as u64;
        if self.pending.len() >= self.chunk {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if !self.pending.is_empty() {
            self.file.append(&self.pending)?;
            self.pending.clear();
            if self.pending.capacity() > self.chunk.max(IO_CHUNK_BYTES) {
                self.pending = Vec::new();
            }
        }
        Ok(())
    }

    /// Writes what is buffered and frees the buffer: a file that will not be
    /// written to for a while (a finished run or part) holds no memory.
    pub(crate) fn flush_and_free(&mut self) -> Result<()> {
        self.flush()?;
        self.pending = Vec::new();
        Ok(())
    }

    /// Rows written so far.
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    /// Bytes written so far (on disk or about to be).
    pub(crate) fn bytes(&self) -> u64 {
        self.file.len + self.pending.len() as u64
    }

    /// Memory the file holds: its write buffer.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.pending.capacity()
    }

    /// Ends writing; the batches come back from the reader in the order written.
    pub(crate) fn into_reader(mut self) -> Result<BatchReader> {
        self.flush()?;
        self.pending = Vec::new();
        Ok(BatchReader { end: self.file.len, file: self.file, types: self.types, at: 0, buf: Vec::new(), pos: 0, chunk: self.chunk })
    }
}

/// Reads a [`BatchFile`]'s batches back, a chunk of the file at a time.
pub(crate) struct BatchReader {
    file: ScratchFile,
    types: Vec<DataType>,
    /// File offset of the end of `buf`'s bytes.
    at: u64,
    end: u64,
    buf: Vec<u8>,
    /// Where the next record starts in `buf`.
    pos: usize,
    /// Bytes read at once (at least).
    chunk: usize,
}

impl BatchReader {
    /// Makes sure `buf[pos..]` holds at least `need` bytes (fewer only at the end
    /// of the file).
    fn fill(&mut self, need: usize) -> Result<()> {
        if self.buf.len() - self.pos >= need {
            return Ok(());
        }
        self.buf.drain(..self.pos);
        self.pos = 0;
        let want = need.max(self.chunk) - self.buf.len();
        let take = want.min((self.end - self.at) as usize);
        let old = self.buf.len();
        self.buf.resize(old + take, 0);
        self.file.read_at(&mut self.buf[old..], self.at)?;
        self.at += take as u64;
        Ok(())
    }

    /// The next batch, or `None` after the last.
    pub(crate) fn next_batch(&mut self) -> Result<Option<Batch>> {
        self.fill(8)?;
        if self.buf.len() == self.pos {
            return Ok(None);
        }
        let damaged = || Error::io("a temporary file of this statement is damaged (checksum mismatch)");
        if self.buf.len() - self.pos < 8 {
            return Err(damaged());
        }
        let head = &self.buf[self.pos..self.pos + 8];
        let len = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
        self.fill(8 + len)?;
        if self.buf.len() - self.pos < 8 + len {
            return Err(damaged());
        }
        let payload = &self.buf[self.pos + 8..self.pos + 8 + len];
        if crc32fast::hash(payload) != crc {
            return Err(damaged());
        }
        let batch = decode_batch(payload, &self.types).ok_or_else(damaged)?;
        self.pos += 8 + len;
        Ok(Some(batch))
    }
}

/// Batches kept in arrival order until the end of their input, in memory while they
/// fit `budget_bytes` and then in a temporary file: what a write statement computes
/// before it writes (UPDATE, DELETE, an INSERT reading its own table; the Halloween
/// problem). Once over the budget every batch held so far, and every later one, goes
/// to the file, so the order is kept and the memory held stays under the budget.
pub(crate) struct HeldBatches {
    types: Vec<DataType>,
    budget_bytes: usize,
    mem: Vec<Batch>,
    mem_bytes: usize,
    file: Option<BatchFile>,
    rows: usize,
}

impl HeldBatches {
    pub(crate) fn new(types: &[DataType], budget_bytes: usize) -> HeldBatches {
        HeldBatches { types: types.to_vec(), budget_bytes, mem: Vec::new(), mem_bytes: 0, file: None, rows: 0 }
    }

    /// Holds batch `b` (made dense here).
    pub(crate) fn push(&mut self, b: Batch) -> Result<()> {
        let b = b.compact();
        let n = b.rows();
        if n == 0 {
            return Ok(());
        }
        self.rows += n;
        if let Some(file) = &mut self.file {
            return file.push(&b.columns, n);
        }
        self.mem_bytes += b.heap_bytes() + b.columns.len() * std::mem::size_of::<Vector>();
        self.mem.push(b);
        if self.mem_bytes > self.budget_bytes {
            let mut file = BatchFile::create_with_chunk(&self.types, IO_CHUNK_BYTES)?;
            for b in self.mem.drain(..) {
                file.push(&b.columns, b.rows())?;
            }
            self.mem_bytes = 0;
            self.file = Some(file);
        }
        Ok(())
    }

    /// Rows held.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// Calls `f` on every batch, in the order they were pushed; a held batch is
    /// freed (or read from the file) as `f` reaches it.
    pub(crate) fn drain(self, mut f: impl FnMut(Batch) -> Result<()>) -> Result<()> {
        match self.file {
            Some(file) => {
                let mut reader = file.into_reader()?;
                while let Some(b) = reader.next_batch()? {
                    f(b)?;
                }
                Ok(())
            }
            None => self.mem.into_iter().try_for_each(f),
        }
    }
}

/// Rows split into [`FANOUT`] temporary files by bits of a hash of their keys: at
/// `level` 0 the top four bits, at level 1 the next four, and so on, so a part
/// that is still too large splits again with bits that differ inside it. Rows
/// gather per part until a batch is full or the part holds its share of
/// `budget_bytes`, then are written to the part's file at once.
pub(crate) struct Partitions {
    types: Vec<DataType>,
    level: u32,
    /// Bytes one part's waiting rows may hold.
    part_budget: usize,
    files: Vec<Option<BatchFile>>,
    pending: Vec<Vec<Vector>>,
    pending_rows: Vec<usize>,
    /// Row positions of one input batch per part (reused).
    picks: Vec<Vec<u32>>,
}

impl Partitions {
    /// Parts of rows of `types` split at `level`, whose waiting rows hold about
    /// `budget_bytes` at most.
    pub(crate) fn new(types: &[DataType], level: u32, budget_bytes: usize) -> Partitions {
        Partitions {
            types: types.to_vec(),
            level,
            part_budget: budget_bytes / FANOUT,
            files: (0..FANOUT).map(|_| None).collect(),
            pending: (0..FANOUT).map(|_| types.iter().map(|t| Vector::new(*t, 0)).collect()).collect(),
            pending_rows: vec![0; FANOUT],
            picks: vec![Vec::new(); FANOUT],
        }
    }

    /// The part a row with key hash `hash` belongs to at `level`.
    pub(crate) fn part_of(hash: u64, level: u32) -> usize {
        let shift = 64 - (level + 1) * FANOUT.trailing_zeros();
        ((hash >> shift) as usize) & (FANOUT - 1)
    }

    /// Adds rows `positions` of `cols` (dense vectors of the parts' types), whose
    /// key hashes are `hashes[k]` for position `k`.
    pub(crate) fn push(&mut self, cols: &[Vector], positions: &[u32], hashes: &[u64]) -> Result<()> {
        for p in &mut self.picks {
            p.clear();
        }
        for &k in positions {
            self.picks[Self::part_of(hashes[k as usize], self.level)].push(k);
        }
        for part in 0..FANOUT {
            if self.picks[part].is_empty() {
                continue;
            }
            let picks = std::mem::take(&mut self.picks[part]);
            for (into, from) in self.pending[part].iter_mut().zip(cols) {
                into.extend(&from.gather(&picks));
            }
            self.pending_rows[part] += picks.len();
            self.picks[part] = picks;
            if self.pending_rows[part] >= BATCH_SIZE
                || self.pending[part].iter().map(Vector::heap_bytes).sum::<usize>() >= self.part_budget
            {
                self.flush_part(part)?;
            }
        }
        Ok(())
    }

    fn flush_part(&mut self, part: usize) -> Result<()> {
        let n = self.pending_rows[part];
        if n == 0 {
            return Ok(());
        }
        let file = match &mut self.files[part] {
            Some(f) => f,
            // Written through (a record at a time): the rows waiting are the
            // part's pending vectors, bounded by the budget.
            slot => slot.insert(BatchFile::create_with_chunk(&self.types, 1)?),
        };
        file.push(&self.pending[part], n)?;
        self.pending[part] = self.types.iter().map(|t| Vector::new(*t, 0)).collect();
        self.pending_rows[part] = 0;
        Ok(())
    }

    /// Rows added so far.
    pub(crate) fn rows(&self) -> u64 {
        self.files.iter().flatten().map(BatchFile::rows).sum::<u64>() + self.pending_rows.iter().sum::<usize>() as u64
    }

    /// Memory held: rows waiting for a full batch, and write buffers.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.pending.iter().flatten().map(Vector::heap_bytes).sum::<usize>()
            + self.files.iter().flatten().map(BatchFile::heap_bytes).sum::<usize>()
    }

    /// Ends writing ([`Partitions::finish`]) and counts the rows and bytes written
    /// for node `id` (EXPLAIN ANALYZE): each part's file, `None` for a part no row
    /// went to.
    pub(crate) fn finish_recorded(self, ex: &super::Exec<'_>, id: usize) -> Result<Vec<Option<BatchFile>>> {
        let rows = self.rows();
        let (files, bytes) = self.finish()?;
        ex.record_spill(id, rows, bytes);
        Ok(files)
    }

    /// Ends writing: each part's file (`None` for a part no row went to), and the
    /// bytes written in all.
    pub(crate) fn finish(mut self) -> Result<(Vec<Option<BatchFile>>, u64)> {
        for part in 0..FANOUT {
            self.flush_part(part)?;
            if let Some(file) = &mut self.files[part] {
                file.flush_and_free()?;
            }
        }
        let bytes = self.files.iter().flatten().map(BatchFile::bytes).sum();
        Ok((self.files, bytes))
    }
}

// ---- The record format ----

/// Physical forms, as stored in a record.
const TAG_BOOL: u8 = 0;
const TAG_I16: u8 = 1;
const TAG_I32: u8 = 2;
const TAG_I64: u8 = 3;
const TAG_F32: u8 = 4;
const TAG_F64: u8 = 5;
const TAG_DEC: u8 = 6;
const TAG_DEC64: u8 = 7;
const TAG_INTERVAL: u8 = 8;
const TAG_STR: u8 = 9;

/// Appends the first `n` rows of `cols` to `out`.
fn encode_batch(cols: &[Vector], n: usize, out: &mut Vec<u8>) -> Result<()> {
    out.extend_from_slice(&(n as u32).to_le_bytes());
    for c in cols {
        match &c.nulls {
            Some(nulls) => {
                out.push(1);
                out.extend(nulls[..n].iter().map(|&b| b as u8));
            }
            None => out.push(0),
        }
        macro_rules! fixed {
            ($tag:expr, $v:expr) => {{
                out.push($tag);
                for x in &$v[..n] {
                    out.extend_from_slice(&x.to_le_bytes());
                }
            }};
        }
        match &c.data {
            Data::Bool(v) => {
                out.push(TAG_BOOL);
                out.extend(v[..n].iter().map(|&b| b as u8));
            }
            Data::I16(v) => fixed!(TAG_I16, v),
            Data::I32(v) => fixed!(TAG_I32, v),
            Data::I64(v) => fixed!(TAG_I64, v),
            Data::F32(v) => fixed!(TAG_F32, v),
            Data::F64(v) => fixed!(TAG_F64, v),
            Data::Dec(v) => {
                out.push(TAG_DEC);
                for d in &v[..n] {
                    out.extend_from_slice(&d.unscaled().to_le_bytes());
                    out.push(d.scale());
                }
            }
            Data::Dec64(v) => {
                out.push(TAG_DEC64);
                out.push(v.scale);
                for x in &v.values[..n] {
                    out.extend_from_slice(&x.to_le_bytes());
                }
            }
            Data::Interval(v) => {
                out.push(TAG_INTERVAL);
                for i in &v[..n] {
                    out.extend_from_slice(&i.months.to_le_bytes());
                    out.extend_from_slice(&i.days.to_le_bytes());
                    out.extend_from_slice(&i.micros.to_le_bytes());
                }
            }
            Data::Str(v) => {
                out.push(TAG_STR);
                let total: usize = (0..n).map(|k| v.get(k).len()).sum();
                let total = u32::try_from(total).map_err(|_| Error::internal("a spilled batch over 4 GB"))?;
                out.extend_from_slice(&total.to_le_bytes());
                for k in 0..n {
                    out.extend_from_slice(&(v.get(k).len() as u32).to_le_bytes());
                }
                for k in 0..n {
                    out.extend_from_slice(v.get(k).as_bytes());
                }
            }
        }
    }
    Ok(())
}

/// A cursor over a record's payload; every read is bounds-checked.
struct Cursor<'a> {
    bytes: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.bytes.len() < n {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    /// `n` fixed-width values of `W` bytes each.
    fn array<const W: usize, T>(&mut self, n: usize, from: fn([u8; W]) -> T) -> Option<Vec<T>> {
        let bytes = self.take(n.checked_mul(W)?)?;
        Some(bytes.chunks_exact(W).map(|c| from(c.try_into().expect("W bytes"))).collect())
    }
}

/// The batch a payload holds, with `types` as its columns' types; `None` when the
/// payload is not a well-formed record of them.
fn decode_batch(payload: &[u8], types: &[DataType]) -> Option<Batch> {
    let mut c = Cursor { bytes: payload };
    let n = c.u32()? as usize;
    let mut cols = Vec::with_capacity(types.len());
    for ty in types {
        let nulls = match c.u8()? {
            0 => None,
            1 => Some(c.take(n)?.iter().map(|&b| b != 0).collect::<Vec<bool>>()),
            _ => return None,
        };
        let data = match c.u8()? {
            TAG_BOOL => Data::Bool(c.take(n)?.iter().map(|&b| b != 0).collect()),
            TAG_I16 => Data::I16(c.array(n, i16::from_le_bytes)?),
            TAG_I32 => Data::I32(c.array(n, i32::from_le_bytes)?),
            TAG_I64 => Data::I64(c.array(n, i64::from_le_bytes)?),
            TAG_F32 => Data::F32(c.array(n, f32::from_le_bytes)?),
            TAG_F64 => Data::F64(c.array(n, f64::from_le_bytes)?),
            TAG_DEC => {
                let raw = c.array(n, |b: [u8; 17]| (i128::from_le_bytes(b[..16].try_into().expect("16 bytes")), b[16]))?;
                Data::Dec(raw.into_iter().map(|(u, s)| Decimal::new(u, s).ok()).collect::<Option<Vec<_>>>()?)
            }
            TAG_DEC64 => {
                let scale = c.u8()?;
                Data::Dec64(Dec64Vec { scale, values: c.array(n, i64::from_le_bytes)? })
            }
            TAG_INTERVAL => Data::Interval(c.array(n, |b: [u8; 16]| {
                Interval {
                    months: i32::from_le_bytes(b[..4].try_into().expect("4 bytes")),
                    days: i32::from_le_bytes(b[4..8].try_into().expect("4 bytes")),
                    micros: i64::from_le_bytes(b[8..].try_into().expect("8 bytes")),
                }
            })?),
            TAG_STR => {
                let total = c.u32()? as usize;
                let lens = c.array(n, u32::from_le_bytes)?;
                let text = std::str::from_utf8(c.take(total)?).ok()?;
                let mut v = StrVec::with_capacity(n, total);
                let mut at = 0usize;
                for len in lens {
                    let end = at.checked_add(len as usize)?;
                    v.push(text.get(at..end)?);
                    at = end;
                }
                if at != total {
                    return None;
                }
                Data::Str(v)
            }
            _ => return None,
        };
        if data.physical_type() != crate::vector::PhysicalType::of(ty) || data.len() != n {
            return None;
        }
        cols.push(Vector::from_data(*ty, data, nulls));
    }
    if !c.bytes.is_empty() {
        return None;
    }
    Some(if cols.is_empty() { Batch::empty_rows(n) } else { Batch::new(cols, n) })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::types::{Date, Timestamp, Value};

    /// One column type of every physical form (both decimal forms, char(n)): what
    /// the spill and sort tests run over.
    pub(crate) fn all_types() -> Vec<DataType> {
        vec![
            DataType::Boolean,
            DataType::SmallInt,
            DataType::Integer,
            DataType::BigInt,
            DataType::Real,
            DataType::Double,
            DataType::Date,
            DataType::Timestamp,
            DataType::Decimal { precision: Some(12), scale: 2 },
            DataType::Decimal { precision: None, scale: 0 },
            DataType::Interval,
            DataType::Text,
            DataType::Char(3),
        ]
    }

    /// A value of `ty` for row `k`: NULL every fifth row, empty and long strings,
    /// extremes of each type.
    fn value(ty: &DataType, k: usize) -> Value {
        if k % 5 == 3 {
            return Value::Null;
        }
        let x = (k as i64).wrapping_mul(0x9e37_79b9) - 1_000_000;
        match ty {
            DataType::Boolean => Value::Boolean(k % 2 == 0),
            DataType::SmallInt => Value::SmallInt(if k == 1 { i16::MIN } else { x as i16 }),
            DataType::Integer => Value::Integer(if k == 1 { i32::MAX } else { x as i32 }),
            DataType::BigInt => Value::BigInt(if k == 1 { i64::MIN } else { x }),
            DataType::Real => Value::Real(x as f32 / 7.0),
            DataType::Double => Value::Double(if k == 1 { f64::NAN } else { x as f64 / 3.0 }),
            DataType::Date => Value::Date(Date(x as i32 % 100_000)),
            DataType::Timestamp => Value::Timestamp(Timestamp(x.wrapping_mul(1_000_003))),
            DataType::Decimal { precision: Some(_), .. } => Value::Decimal(Decimal::new(x as i128, 2).unwrap()),
            DataType::Decimal { .. } => {
                Value::Decimal(Decimal::new(if k == 1 { 10i128.pow(38) - 1 } else { x as i128 * 1_000_000_007 }, (k % 7) as u8).unwrap())
            }
            DataType::Interval => Value::Interval(Interval { months: k as i32, days: -(k as i32), micros: x }),
            DataType::Text => Value::Text(match k % 4 {
                0 => String::new(),
                1 => "é".repeat(3000),
                _ => format!("row {k}"),
            }),
            DataType::Char(_) => Value::Char("ab".into()),
            _ => unreachable!(),
        }
    }

    fn batch(types: &[DataType], n: usize, offset: usize) -> Vec<Vector> {
        types
            .iter()
            .map(|t| {
                let mut v = Vector::new(*t, n);
                (0..n).for_each(|k| v.push_value(&value(t, k + offset)));
                v
            })
            .collect()
    }

    fn rows(cols: &[Vector], n: usize) -> Vec<Vec<String>> {
        (0..n).map(|k| cols.iter().map(|c| format!("{:?}", c.value(k))).collect()).collect()
    }

    /// Batches of every type, with NULLs and without, of sizes 0, 1, 2, 1023, 1024
    /// and 1025, come back as written, in order; more than one read chunk's worth.
    #[test]
    fn batches_come_back_as_written() {
        let types = all_types();
        let mut file = BatchFile::create(&types).unwrap();
        let mut written = Vec::new();
        for (i, n) in [0usize, 1, 2, 1023, 1024, 1025, 700, 1024].into_iter().enumerate() {
            let cols = batch(&types, n, i * 31);
            file.push(&cols, n).unwrap();
            if n > 0 {
                written.push(rows(&cols, n));
            }
        }
        // A column without NULLs, and a Dec64 vector.
        let mut plain = Vector::new(DataType::Integer, 3);
        (0..3).for_each(|k| plain.push_value(&Value::Integer(k)));
        let mut one = BatchFile::create(&[DataType::Integer]).unwrap();
        one.push(std::slice::from_ref(&plain), 3).unwrap();
        let b = one.into_reader().unwrap().next_batch().unwrap().unwrap();
        assert_eq!(b.columns[0], plain);

        assert!(file.bytes() > IO_CHUNK_BYTES as u64);
        let mut reader = file.into_reader().unwrap();
        let mut read = Vec::new();
        while let Some(b) = reader.next_batch().unwrap() {
            read.push(rows(&b.columns, b.rows()));
        }
        assert_eq!(read, written);
    }

    #[test]
    fn a_batch_without_columns_keeps_its_row_count() {
        let mut file = BatchFile::create(&[]).unwrap();
        file.push(&[], 7).unwrap();
        let mut r = file.into_reader().unwrap();
        assert_eq!(r.next_batch().unwrap().unwrap().rows(), 7);
        assert!(r.next_batch().unwrap().is_none());
    }

    /// A flipped byte anywhere in a record is reported, never decoded.
    #[test]
    fn a_damaged_record_is_an_error() {
        let types = all_types();
        let cols = batch(&types, 50, 0);
        let mut file = BatchFile::create(&types).unwrap();
        file.push(&cols, 50).unwrap();
        file.flush().unwrap();
        let len = file.file.len;
        for at in [0, 5, 9, len / 2, len - 1] {
            let mut byte = [0u8];
            file.file.read_at(&mut byte, at).unwrap();
            file.file.file.write_all_at(&[byte[0] ^ 0x10], at).unwrap();
            let r = BatchReader { end: len, file: ScratchFile { file: file.file.file.try_clone().unwrap(), len }, types: types.clone(), at: 0, buf: Vec::new(), pos: 0, chunk: IO_CHUNK_BYTES }.next_batch_checked();
            assert!(r.is_err(), "flip at {at} was not detected");
            file.file.file.write_all_at(&byte, at).unwrap();
        }
    }

    impl BatchReader {
        fn next_batch_checked(mut self) -> Result<Option<Batch>> {
            self.next_batch()
        }
    }

    /// Every row lands in the part its hash names, each part's rows in input order.
    #[test]
    fn partitions_split_by_hash_bits_and_keep_order() {
        let types = [DataType::BigInt];
        for level in [0, 1, MAX_LEVELS - 1] {
            let mut parts = Partitions::new(&types, level, 1 << 20);
            let n = 3000;
            let mut v = Vector::new(DataType::BigInt, n);
            (0..n).for_each(|k| v.push_value(&Value::BigInt(k as i64)));
            let hashes: Vec<u64> = (0..n as u64).map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
            let positions: Vec<u32> = (0..n as u32).filter(|k| k % 3 != 0).collect();
            parts.push(std::slice::from_ref(&v), &positions, &hashes).unwrap();
            assert_eq!(parts.rows(), positions.len() as u64);
            let (files, _) = parts.finish().unwrap();
            let mut seen = 0;
            for (part, file) in files.into_iter().enumerate() {
                let Some(file) = file else { continue };
                let mut r = file.into_reader().unwrap();
                let mut last = -1i64;
                while let Some(b) = r.next_batch().unwrap() {
                    for k in 0..b.rows() {
                        let Value::BigInt(x) = b.columns[0].value(k) else { panic!() };
                        assert!(x > last);
                        last = x;
                        assert_ne!(x % 3, 0);
                        assert_eq!(Partitions::part_of(hashes[x as usize], level), part);
                        seen += 1;
                    }
                }
            }
            assert_eq!(seen, positions.len());
        }
    }
}
