//! Made bees: a spec, the routine a maker produced for it, and what the cache shows.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::abi::{ByteRef, ColumnOut, FormArgs, Progress, RunArgs, SortArgs, SortColumn};
use crate::cache::BeeOwner;
use crate::compiled::{self, CompiledCode, FormFn, Jit, ScanFn};
use crate::instantiated;
use crate::spec::{RelationSpec, ScanSpec, SortSpec, ValueKind};

/// Which maker made a bee.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Maker {
    /// Cranelift machine code ([`crate::compiled`]).
    Compiled,
    /// Monomorphized kernels bound at plan time ([`crate::instantiated`]).
    Instantiated,
}

impl fmt::Display for Maker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Maker::Compiled => "compiled",
            Maker::Instantiated => "instantiated",
        })
    }
}

/// What a bee does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BeeKind {
    /// Relation bee: stored tuple → column slots (the paper's GCL).
    Deform,
    /// Relation bee: row slots → stored tuple (the paper's SCL).
    Form,
    /// Query bee: predicate and projection fused with deforming (the paper's EVP, fused).
    Scan,
    /// Query bee: a sort's keys → normalized keys ordered by memcmp.
    Sort,
    /// Query bee: a hash join's probe (key columns → packed keys → table ids).
    Join,
    /// Query bee: a GROUP BY's key packing, group lookup and aggregate updates.
    Aggregate,
}

impl fmt::Display for BeeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BeeKind::Deform => "deform",
            BeeKind::Form => "form",
            BeeKind::Scan => "scan",
            BeeKind::Sort => "sort",
            BeeKind::Join => "join",
            BeeKind::Aggregate => "aggregate",
        })
    }
}

/// What the cache knows about a bee (one row of `beedb_bees`).
#[derive(Debug)]
pub struct BeeInfo {
    pub id: u64,
    pub kind: BeeKind,
    pub owner: BeeOwner,
    pub maker: Maker,
    /// Machine code bytes (0 for an instantiated bee, whose kernels are part of the
    /// binary).
    pub code_bytes: usize,
    /// Time to make the bee, in nanoseconds.
    pub build_ns: u64,
    /// Calls so far (one call covers a run of tuples, typically a page).
    pub invocations: AtomicU64,
    /// Tuples (scan, deform) or rows (form) handed to the bee so far.
    pub tuples: AtomicU64,
    /// Why the policy chose this maker.
    pub reason: String,
}

impl BeeInfo {
    /// The record of a bee just made (`started` when making began), with a new id.
    pub(crate) fn made(kind: BeeKind, owner: BeeOwner, maker: Maker, code_bytes: usize, started: Instant, reason: String) -> Arc<BeeInfo> {
        Arc::new(BeeInfo {
            id: next_id(),
            kind,
            owner,
            maker,
            code_bytes,
            build_ns: started.elapsed().as_nanos() as u64,
            invocations: AtomicU64::new(0),
            tuples: AtomicU64::new(0),
            reason,
        })
    }

    pub fn invocations(&self) -> u64 {
        self.invocations.load(Ordering::Relaxed)
    }

    pub fn tuples(&self) -> u64 {
        self.tuples.load(Ordering::Relaxed)
    }

    pub(crate) fn count(&self, n: u64) {
        self.invocations.fetch_add(1, Ordering::Relaxed);
        self.tuples.fetch_add(n, Ordering::Relaxed);
    }
}

enum ScanRoutine {
    Compiled(#[allow(dead_code)] Box<CompiledCode>, ScanFn),
    Instantiated(instantiated::Scan),
}

/// A scan or deform bee, ready to call. Dropping the last reference frees its code.
pub struct ScanBee {
    spec: ScanSpec,
    routine: ScanRoutine,
    info: Arc<BeeInfo>,
}

/// A unique id for every bee made by this process.
pub(crate) fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl ScanBee {
    /// Makes a bee for `spec` with `maker` (`jit` is needed for [`Maker::Compiled`]).
    pub fn make(
        spec: ScanSpec,
        maker: Maker,
        jit: Option<&Jit>,
        owner: BeeOwner,
        reason: String,
    ) -> Result<ScanBee, String> {
        spec.check()?;
        let start = Instant::now();
        let (routine, code_bytes) = match maker {
            Maker::Compiled => {
                let jit = jit.ok_or("the compiled maker is not available")?;
                let (code, f) = compiled::compile_scan(jit, &spec)?;
                let bytes = code.code_bytes;
                (ScanRoutine::Compiled(Box::new(code), f), bytes)
            }
            Maker::Instantiated => (ScanRoutine::Instantiated(instantiated::Scan::new(&spec)), 0),
        };
        let kind = if spec.is_deform() {
            BeeKind::Deform
        } else {
            BeeKind::Scan
        };
        let info = BeeInfo::made(kind, owner, maker, code_bytes, start, reason);
        Ok(ScanBee {
            spec,
            routine,
            info,
        })
    }

    pub fn spec(&self) -> &ScanSpec {
        &self.spec
    }

    pub fn info(&self) -> &Arc<BeeInfo> {
        &self.info
    }

    pub fn maker(&self) -> Maker {
        self.info.maker
    }

    /// Calls the routine.
    ///
    /// # Safety
    /// `args` must satisfy the [`RunArgs`] contract for this bee's spec.
    #[inline]
    pub unsafe fn call(&self, args: &mut RunArgs) -> u64 {
        self.info.count(args.n);
        // SAFETY: forwarded contract.
        unsafe {
            match &self.routine {
                ScanRoutine::Compiled(_, f) => f(args),
                ScanRoutine::Instantiated(s) => s.run(args),
            }
        }
    }

    /// Runs the bee over `tuples`, writing rows from `row0` on, at most `cap` of them.
    ///
    /// # Safety
    /// Every tuple must be readable; `outs` must be the bee's output buffers with room
    /// for `row0 + cap` rows (see [`crate::abi`]); `sel` must hold `cap` entries.
    pub unsafe fn run(
        &self,
        tuples: &[ByteRef],
        outs: &[ColumnOut],
        row0: usize,
        cap: usize,
        sel: &mut [u32],
        var_limit: usize,
    ) -> Progress {
        assert_eq!(outs.len(), self.spec.outputs.len(), "one buffer per output");
        assert!(sel.len() >= cap, "sel holds cap entries");
        let mut args = RunArgs {
            tuples: tuples.as_ptr(),
            n: tuples.len() as u64,
            outs: outs.as_ptr(),
            row0: row0 as u64,
            cap: cap as u64,
            sel: sel.as_mut_ptr(),
            var_limit: var_limit as u64,
            produced: 0,
        };
        // SAFETY: forwarded contract.
        let consumed = unsafe { self.call(&mut args) } as usize;
        Progress::classify(tuples.len(), consumed, args.produced as usize, cap)
    }
}

enum FormRoutine {
    Compiled(#[allow(dead_code)] Box<CompiledCode>, FormFn),
    Instantiated(instantiated::Form),
}

/// A form bee, ready to call.
pub struct FormBee {
    relation: Arc<RelationSpec>,
    routine: FormRoutine,
    info: Arc<BeeInfo>,
}

impl FormBee {
    pub fn make(
        relation: Arc<RelationSpec>,
        maker: Maker,
        jit: Option<&Jit>,
        owner: BeeOwner,
        reason: String,
    ) -> Result<FormBee, String> {
        let start = Instant::now();
        let (routine, code_bytes) = match maker {
            Maker::Compiled => {
                let jit = jit.ok_or("the compiled maker is not available")?;
                let (code, f) = compiled::compile_form(jit, &relation)?;
                let bytes = code.code_bytes;
                (FormRoutine::Compiled(Box::new(code), f), bytes)
            }
            Maker::Instantiated => (FormRoutine::Instantiated(instantiated::Form::new(&relation)), 0),
        };
        let info = BeeInfo::made(BeeKind::Form, owner, maker, code_bytes, start, reason);
        Ok(FormBee {
            relation,
            routine,
            info,
        })
    }

    pub fn relation(&self) -> &Arc<RelationSpec> {
        &self.relation
    }

    pub fn info(&self) -> &Arc<BeeInfo> {
        &self.info
    }

    /// Calls the routine; returns rows formed.
    ///
    /// # Safety
    /// `args` must satisfy the [`FormArgs`] contract for this bee's relation.
    #[inline]
    pub unsafe fn call(&self, args: &mut FormArgs) -> u64 {
        self.info.count(args.n);
        // SAFETY: forwarded contract.
        unsafe {
            match &self.routine {
                FormRoutine::Compiled(_, f) => f(args),
                FormRoutine::Instantiated(s) => s.run(args),
            }
        }
    }
}

impl fmt::Debug for ScanBee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ScanBee(#{} {} {})", self.info.id, self.info.kind, self.info.maker)
    }
}

impl fmt::Debug for FormBee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FormBee(#{} {})", self.info.id, self.info.maker)
    }
}

/// One sort key column's slots, as [`SortBee::encode`] takes them.
#[derive(Clone, Copy, Debug)]
pub enum SortData<'a> {
    /// `Bool`.
    Bool(&'a [bool]),
    /// `Int(2)`, `Int(4)`, `Int(8)`.
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    /// `Float(4)`, `Float(8)`.
    F32(&'a [f32]),
    F64(&'a [f64]),
    /// `Decimal`: unscaled, one scale for the column.
    I128(&'a [i128]),
    /// `Interval`: months i32, days i32, micros i64, little-endian.
    Interval(&'a [[u8; 16]]),
    /// `Bytes`: one reference per row (any for a NULL row).
    Bytes(&'a [ByteRef]),
}

/// One sort key column: its slots and, when some row is NULL, a flag per row.
#[derive(Clone, Copy, Debug)]
pub struct SortInput<'a> {
    pub data: SortData<'a>,
    pub nulls: Option<&'a [bool]>,
}

impl SortInput<'_> {
    /// The column as the ABI passes it, after checking it has `n` rows of `kind`.
    fn column(&self, kind: ValueKind, n: usize) -> Result<SortColumn, String> {
        let (ok, len, data) = match (self.data, kind) {
            (SortData::Bool(d), ValueKind::Bool) => (true, d.len(), d.as_ptr() as *const u8),
            (SortData::I16(d), ValueKind::Int(2)) => (true, d.len(), d.as_ptr() as *const u8),
            (SortData::I32(d), ValueKind::Int(4)) => (true, d.len(), d.as_ptr() as *const u8),
            (SortData::I64(d), ValueKind::Int(8)) => (true, d.len(), d.as_ptr() as *const u8),
            (SortData::F32(d), ValueKind::Float(4)) => (true, d.len(), d.as_ptr() as *const u8),
            (SortData::F64(d), ValueKind::Float(8)) => (true, d.len(), d.as_ptr() as *const u8),
            (SortData::I128(d), ValueKind::Decimal) => (true, d.len(), d.as_ptr() as *const u8),
            (SortData::Interval(d), ValueKind::Interval) => (true, d.len(), d.as_ptr() as *const u8),
            (SortData::Bytes(d), ValueKind::Bytes) => (true, d.len(), d.as_ptr() as *const u8),
            _ => (false, 0, std::ptr::null()),
        };
        if !ok {
            return Err(format!("a {:?} column for a {kind:?} sort key", self.data));
        }
        if len < n || self.nulls.is_some_and(|m| m.len() < n) {
            return Err(format!("a sort key column of {len} rows for {n} rows"));
        }
        let nulls = self.nulls.map_or(std::ptr::null(), |m| m.as_ptr() as *const u8);
        Ok(SortColumn { data, nulls })
    }
}

enum SortRoutine {
    Compiled(#[allow(dead_code)] Box<CompiledCode>, compiled::SortFn),
    Instantiated(instantiated::Sort),
}

/// A sort bee: encodes rows' sort keys into normalized keys
/// ([`crate::spec::SortSpec`]), which [`SortBee::order`] sorts.
pub struct SortBee {
    spec: SortSpec,
    routine: SortRoutine,
    info: Arc<BeeInfo>,
}

impl SortBee {
    /// Makes a bee for `spec` with `maker` (`jit` is needed for [`Maker::Compiled`]).
    pub fn make(spec: SortSpec, maker: Maker, jit: Option<&Jit>, owner: BeeOwner, reason: String) -> Result<SortBee, String> {
        spec.check()?;
        let start = Instant::now();
        let (routine, code_bytes) = match maker {
            Maker::Compiled => {
                let jit = jit.ok_or("the compiled maker is not available")?;
                let (code, f) = compiled::compile_sort(jit, &spec)?;
                let bytes = code.code_bytes;
                (SortRoutine::Compiled(Box::new(code), f), bytes)
            }
            Maker::Instantiated => (SortRoutine::Instantiated(instantiated::Sort::new(&spec)), 0),
        };
        let info = BeeInfo::made(BeeKind::Sort, owner, maker, code_bytes, start, reason);
        Ok(SortBee { spec, routine, info })
    }

    pub fn spec(&self) -> &SortSpec {
        &self.spec
    }

    pub fn info(&self) -> &Arc<BeeInfo> {
        &self.info
    }

    pub fn maker(&self) -> Maker {
        self.info.maker
    }

    /// Calls the routine.
    ///
    /// # Safety
    /// `args` must satisfy the [`SortArgs`] contract for this bee's spec.
    #[inline]
    pub unsafe fn call(&self, args: &SortArgs) {
        self.info.count(args.n);
        // SAFETY: forwarded contract.
        unsafe {
            match &self.routine {
                SortRoutine::Compiled(_, f) => {
                    f(args);
                }
                SortRoutine::Instantiated(s) => s.run(args),
            }
        }
    }

    /// The normalized keys of rows `0..n` of `cols` (one per part), `stride()` bytes
    /// each.
    ///
    /// # Safety
    /// Every [`ByteRef`] of a `Bytes` column's non-NULL rows must be readable.
    pub unsafe fn encode(&self, cols: &[SortInput<'_>], n: usize) -> Result<Vec<u8>, String> {
        if cols.len() != self.spec.parts.len() {
            return Err(format!("{} sort key columns for {} keys", cols.len(), self.spec.parts.len()));
        }
        let cols = cols.iter().zip(&self.spec.parts).map(|(c, p)| c.column(p.kind, n)).collect::<Result<Vec<_>, _>>()?;
        let stride = self.spec.stride();
        let mut keys = vec![0u8; n * stride];
        let args = SortArgs { cols: cols.as_ptr(), n: n as u64, keys: keys.as_mut_ptr(), stride: stride as u64 };
        // SAFETY: the columns were checked for kind and length; ByteRefs per the contract.
        unsafe { self.call(&args) };
        Ok(keys)
    }

    /// Bytes per row of [`SortBee::encode`]'s output.
    pub fn stride(&self) -> usize {
        self.spec.stride()
    }

    /// The permutation that sorts `n` rows of `keys` (from [`SortBee::encode`]): by
    /// key, rows with equal keys needing it by `tie` (row indices; the full
    /// comparison of their keys), then by index — the order of a stable sort.
    pub fn order(&self, keys: &[u8], n: usize, tie: impl FnMut(u32, u32) -> std::cmp::Ordering) -> Vec<u32> {
        let flag = self.spec.has_ties().then(|| self.spec.key_width() - 1);
        crate::order::order(keys, n, self.spec.stride(), flag, tie)
    }
}

impl fmt::Debug for SortBee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SortBee(#{} {})", self.info.id, self.info.maker)
    }
}
