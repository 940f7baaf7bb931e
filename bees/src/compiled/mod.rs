//! The compiled maker: Cranelift machine code for scan, deform and form bees.
//!
//! Every bee is **one function containing the whole loop** over its batch, with the
//! relation's layout, the predicate's constants and the output slot widths baked into
//! the instructions. Why whole loops: Cranelift neither inlines Rust nor removes dead
//! loads, and a call per row (a JIT predicate called from a Rust loop, or generated
//! code calling Rust per value) costs more than it saves; fusing header checks,
//! column access, predicate and output writes into one loop is where the 10×+ over
//! the generic twin comes from. Nothing is called per row except two small Rust
//! helpers: a bytewise comparison ([`bee_bytes_cmp`]) for string leaves whose constant
//! is longer than 16 bytes or whose operator is an ordering, and a byte copy
//! ([`bee_copy`]) for variable values in form bees.
//!
//! # Scan and deform bees ([`ScanFn`], see `scan.rs`)
//!
//! ```text
//! entry(args):  load tuples, n, outs, row0, cap, sel (and var_limit for a deform bee)
//!               (≤ 4 output pointers: load them here too)
//!               jump head(0, 0)
//! head(i, p):   if i >= n || p == cap                                   -> exit(i, p)
//!               (ptr, len) = tuples[i]
//!               len >= 4 and (header word & !1) == N << 16?          else exit(i, p)
//!               len >= var_start(HAS_NULLS)?                           else exit(i, p)
//!               bm = HAS_NULLS ? ptr + fixed_end : <static zero bitmap>
//!               walk variable attributes 0..pred_walk           (bounds: exit(i, p))
//!               t = predicate as (is TRUE, is FALSE) i8 flags; !t    -> head(i + 1, p)
//!               write fixed outputs at constant offsets, walk on to out_walk
//!               writing variable outputs; sel[p] = i             -> head(i + 1, p + 1)
//! exit(c, p):   args.produced = p; return c
//! ```
//!
//! Registers: `i` and `p` are the only loop-carried values (the block parameters of
//! `head`); the tuple pointer and length, `bm`, the walk position and each walked
//! value's `(ptr, len)` are SSA values of one iteration. Output pointers are loop
//! invariants loaded at entry only when there are at most four of them: with more,
//! the register allocator spilled them and shuffled them between registers and stack
//! slots on every branch, so reading `outs[k]` where a column is written (one L1
//! load) made the 9-column deform both cheaper to compile (−28%) and faster
//! (7.4 → 6.7 ns/tuple). Every fallback (bad header, short tuple, a length prefix past
//! the end, an out-of-line value the bee must read) branches to `exit` with the
//! current `i`, so the caller sees [`crate::abi::Stop::Fallback`] at that tuple.
//!
//! * The header test is one 32-bit compare: `(word & !1) == N << 16` checks the
//!   reserved flag bits, the tuple-bee id and the attribute count at once.
//! * NULL tests exist only for nullable columns: one byte load from `bm` at a constant
//!   offset and a constant mask. `bm` points at a static zero bitmap when the tuple has
//!   no bitmap, so the test needs no branch and never reads past the tuple; a loaded
//!   bitmap byte serves every later test of its 8 columns.
//! * The variable region is walked attribute by attribute in straight-line code: the
//!   prefix byte is read from the tuple (or from a zero byte when the walk is at its
//!   end, which then fails the bounds check), a NULL attribute becomes an empty step
//!   by selects, and a short prefix (`< 0xFE`) goes straight to the one bounds check
//!   of the step; `0xFE` (u32 length, read only when it lies inside the tuple) and
//!   `0xFF` go to cold blocks. An out-of-line value branches to `exit` when the
//!   predicate reads it, raises a flag tested after the predicate when only an output
//!   needs it, is tested against the column's `data` pointer in a deform bee, and is
//!   skipped otherwise.
//! * Predicates evaluate every leaf without short-circuit branches into two i8 flags
//!   `t` ("is TRUE") and `f` ("is FALSE"); a node that cannot be UNKNOWN carries only
//!   `t` (`f = !t`). `AND: t = ∧t, f = ∨f`; `OR: t = ∨t, f = ∧f`; `NOT` swaps. A leaf
//!   on a nullable column is masked with "not NULL". Integers compare as sign-extended
//!   i64 against the i64 constant, decimals as i128, booleans as 0/1, floats with
//!   SQL's order (NaN equal to NaN and above everything, -0 = +0) by choosing the
//!   condition code from the operator and whether the constant is NaN — `real`
//!   against a `real` constant as f32, against a `double` constant after an exact
//!   widening. String equality, `IN` members and prefixes with constants of up to 16
//!   bytes are a length test and inline 8/4/2/1-byte compares (nothing is loaded
//!   unless the length allows it); `IN` is an OR of equalities.
//! * Deform bees honour `var_limit` with one compare per variable attribute against
//!   the call's value (branching to the end of the row), and skip outputs whose
//!   `data` is null with one predictable branch per column.
//!
//! # Form bees ([`FormFn`], see `form.rs`)
//!
//! One loop over the rows: read the NULL bytes of the nullable inputs, compute the
//! tuple length (constant fixed part, the bitmap when some input is NULL, each
//! variable value's prefix and length), stop at a row that is too long, does not fit
//! what is left of `buf`, or has a value over 4 GiB (storage's encoder refuses it),
//! then write the header word, zero the alignment gaps of the fixed region, store each
//! fixed attribute at its constant offset (zeros when NULL), the bitmap (only when
//! some input is NULL), and each variable value with its 1- or 5-byte prefix. Every
//! byte of the tuple is written, so `buf` may hold garbage; the gaps between tuples
//! are not touched (as by the generic twin).
//!
//! # Code memory
//!
//! Each bee gets its own `JITModule` (at least one mmapped page of code) holding one
//! function, owned by its [`CompiledCode`]; dropping the `CompiledCode` calls
//! `JITModule::free_memory`, which unmaps the code (`tests/compiled_memory.rs` checks
//! that thousands of compiled and dropped bees do not grow the address space). The
//! constants the code points at (string constants of the predicate) are boxed in the
//! `CompiledCode` too and live exactly as long as the code. A compile that fails
//! frees its module at once. The target ISA is built once per [`Jit`] and cloned (an
//! `Arc`) into each module. Callers must not call a function pointer after dropping
//! its `CompiledCode` (the cache keeps them together); the code itself is reentrant,
//! so one bee may run on many threads at once.
//!
//! # Cost
//!
//! Measured in a release build on the 2-vCPU development machine (minimum / median
//! of 41 compiles; verifier off, `opt_level=speed`, backtracking register allocator;
//! the `#[ignore]`d `compile_cost` test in `tests/compiled_vs_generic.rs`), for a
//! 9-column relation (int4, int8, text, decimal?, float8, bool, text?, int2,
//! float4?):
//!
//! | bee                                       | compile        | code    | run (generic → compiled) |
//! |-------------------------------------------|----------------|---------|--------------------------|
//! | deform, 9 columns                         | 355 / 380 µs   | 1184 B  | 55 → 6.7 ns/tuple        |
//! | scan, `a <= 45 AND b = 'F' AND c > 1.5`, 3 outputs | 200 / 210 µs | 648 B | 39 → 2.4 ns/tuple |
//! | form, 9 columns                           | 275 / 290 µs   | 960 B   | 66 → 8.1 ns/row          |
//!
//! A trivial bee costs about 70 µs (module, ISA clone, prologue, finalization); the
//! rest grows with the IR: about 1 µs per CLIF instruction, most of it in the
//! register allocator: about 7 µs per fixed and 55 µs per variable column of a
//! deform bee. Compile time divided by the time saved per tuple puts the break-even
//! at 5–10 thousand tuples for these bees, which is what the policy weighs.

pub mod agg;
mod form;
pub mod join;
mod pred;
mod scan;
mod sort;

pub use sort::{bee_interval_key, bee_zero};

use std::sync::Mutex;
use std::time::{Duration, Instant};

use cranelift_codegen::ir::{AbiParam, MemFlagsData, Type, types};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module, default_libcall_names};

use crate::abi::{FormArgs, RunArgs, SortArgs};
use crate::spec::{RelationSpec, ScanSpec, SortSpec};

/// A compiled scan or deform routine.
pub type ScanFn = unsafe extern "C" fn(*mut RunArgs) -> u64;
/// A compiled form routine.
pub type FormFn = unsafe extern "C" fn(*mut FormArgs) -> u64;
/// A compiled sort routine (the return value is meaningless).
pub type SortFn = unsafe extern "C" fn(*const SortArgs) -> u64;

/// The code generator: target ISA built once, cloned per module.
pub struct Jit {
    isa: OwnedTargetIsa,
}

impl Jit {
    /// Builds the host ISA. `verify` runs Cranelift's IR verifier (tests).
    pub fn new(verify: bool) -> Result<Jit, String> {
        let mut flags = settings::builder();
        let set = |f: &mut settings::Builder, k: &str, v: &str| {
            f.set(k, v)
                .map_err(|e| format!("cranelift flag {k}={v}: {e}"))
        };
        set(&mut flags, "opt_level", "speed")?;
        set(
            &mut flags,
            "enable_verifier",
            if verify { "true" } else { "false" },
        )?;
        // What cranelift-jit requires.
        set(&mut flags, "is_pic", "false")?;
        set(&mut flags, "use_colocated_libcalls", "false")?;
        // Bees never unwind (their helpers cannot panic); no unwind tables to build.
        set(&mut flags, "unwind_info", "false")?;
        let isa = cranelift_native::builder()
            .map_err(|e| format!("host not supported by cranelift: {e}"))?
            .finish(settings::Flags::new(flags))
            .map_err(|e| format!("cranelift ISA: {e}"))?;
        Ok(Jit { isa })
    }
}

/// Owns the machine code of one bee; dropping it frees the code memory.
pub struct CompiledCode {
    /// Bytes of machine code.
    pub code_bytes: usize,
    /// Wall time spent making the bee (IR, compilation, finalization).
    pub compile_time: Duration,
    /// The module holding the code (`Mutex` only to be `Sync`: it is touched only by
    /// `Drop`).
    module: Mutex<Option<JITModule>>,
    /// Constants the code points at.
    _consts: (Vec<Box<[u8]>>, Vec<Box<[u64]>>),
}

impl Drop for CompiledCode {
    fn drop(&mut self) {
        let module = match self.module.get_mut() {
            Ok(m) => m.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(m) = module {
            // SAFETY: the function pointer handed out with this code must not be
            // called after the code is dropped (the documented contract).
            unsafe { m.free_memory() };
        }
    }
}

impl std::fmt::Debug for CompiledCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledCode")
            .field("code_bytes", &self.code_bytes)
            .field("compile_time", &self.compile_time)
            .finish_non_exhaustive()
    }
}

/// Compiles a scan (or deform) bee.
pub fn compile_scan(jit: &Jit, spec: &ScanSpec) -> Result<(CompiledCode, ScanFn), String> {
    spec.check()?;
    let (code, ptr) = compile_one(jit, |b, consts| scan::build(b, spec, consts))?;
    // SAFETY: the function was generated with the ScanFn signature.
    let f = unsafe { std::mem::transmute::<*const u8, ScanFn>(ptr) };
    Ok((code, f))
}

/// Compiles a form bee.
pub fn compile_form(jit: &Jit, rel: &RelationSpec) -> Result<(CompiledCode, FormFn), String> {
    let (code, ptr) = compile_one(jit, |b, _| form::build(b, rel))?;
    // SAFETY: the function was generated with the FormFn signature.
    let f = unsafe { std::mem::transmute::<*const u8, FormFn>(ptr) };
    Ok((code, f))
}

/// Compiles a sort bee.
pub fn compile_sort(jit: &Jit, spec: &SortSpec) -> Result<(CompiledCode, SortFn), String> {
    spec.check()?;
    let (code, ptr) = compile_one(jit, |b, _| sort::build(b, spec))?;
    // SAFETY: the function was generated with the SortFn signature.
    let f = unsafe { std::mem::transmute::<*const u8, SortFn>(ptr) };
    Ok((code, f))
}

/// Builds one `fn(i64) -> i64` with `build` in a fresh module and finalizes it.
fn compile_one(
    jit: &Jit,
    build: impl FnOnce(&mut FunctionBuilder<'_>, &mut Consts) -> Result<(), String>,
) -> Result<(CompiledCode, *const u8), String> {
    let t0 = Instant::now();
    let mut module = JITModule::new(JITBuilder::with_isa(
        jit.isa.clone(),
        default_libcall_names(),
    ));
    let mut ctx = module.make_context();
    ctx.func.signature.params.push(AbiParam::new(types::I64));
    ctx.func.signature.returns.push(AbiParam::new(types::I64));
    let sig = ctx.func.signature.clone();
    let mut consts = Consts::default();
    {
        let mut fctx = FunctionBuilderContext::new();
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        build(&mut b, &mut consts)?;
        b.seal_all_blocks();
        b.finalize(module.target_config());
    }
    let result = (|| {
        let id = module
            .declare_function("bee", Linkage::Local, &sig)
            .map_err(|e| format!("declare: {e}"))?;
        module
            .define_function(id, &mut ctx)
            .map_err(|e| format!("cranelift: {e:?}"))?;
        let code_bytes = ctx.compiled_code().map_or(0, |c| c.code_buffer().len());
        module
            .finalize_definitions()
            .map_err(|e| format!("finalize: {e}"))?;
        Ok((id, code_bytes))
    })();
    match result {
        Ok((id, code_bytes)) => {
            let ptr = module.get_finalized_function(id);
            Ok((
                CompiledCode {
                    code_bytes,
                    compile_time: t0.elapsed(),
                    module: Mutex::new(Some(module)),
                    _consts: (consts.bytes, consts.words),
                },
                ptr,
            ))
        }
        Err(e) => {
            // SAFETY: nothing from this module was handed out.
            unsafe { module.free_memory() };
            Err(e)
        }
    }
}

/// Constants generated code points at, owned by the [`CompiledCode`].
#[derive(Default)]
struct Consts {
    bytes: Vec<Box<[u8]>>,
    /// Word arrays (aligned for the set probes).
    words: Vec<Box<[u64]>>,
}

impl Consts {
    /// Keeps `v` and returns its address.
    fn words(&mut self, v: Vec<u64>) -> i64 {
        let b = v.into_boxed_slice();
        let addr = b.as_ptr() as i64;
        self.words.push(b);
        addr
    }

    /// Keeps a copy of `v` and returns its address.
    fn bytes(&mut self, v: &[u8]) -> i64 {
        let b: Box<[u8]> = v.into();
        let addr = b.as_ptr() as i64;
        self.bytes.push(b);
        addr
    }
}

/// Memory flags for the argument structs (aligned, never trapping).
const ARGS: MemFlagsData = MemFlagsData::trusted();
/// Tuple bytes and input slots: possibly unaligned, never trapping, not written by
/// the bee.
const RO: MemFlagsData = MemFlagsData::new().with_notrap().with_readonly();
/// Output buffers: possibly unaligned, never trapping.
const WR: MemFlagsData = MemFlagsData::new().with_notrap();

/// The integer type of `w` bytes (1, 2, 4 or 8).
fn int_type(w: usize) -> Type {
    match w {
        1 => types::I8,
        2 => types::I16,
        4 => types::I32,
        _ => types::I64,
    }
}

/// Splits `len` bytes from `start` into pieces of 8, 4, 2 and 1 bytes.
fn pieces(start: usize, len: usize) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let (mut at, end) = (start, start + len);
    while at < end {
        let s = [8, 4, 2, 1]
            .into_iter()
            .find(|&s| at + s <= end)
            .unwrap_or(1);
        v.push((at, s));
        at += s;
    }
    v
}

/// A zero bitmap as long as the longest one (65535 attributes): the NULL tests of a
/// tuple without `HAS_NULLS` read it instead of the tuple.
static ZERO_BITMAP: [u8; 8192] = [0; 8192];

/// Compares `a[..alen]` with `b[..blen]` bytewise then by length: -1, 0 or 1.
///
/// # Safety
/// Both ranges must be readable (or their length 0).
pub unsafe extern "C" fn bee_bytes_cmp(
    a: *const u8,
    alen: usize,
    b: *const u8,
    blen: usize,
) -> i32 {
    // SAFETY: the generated code passes ranges inside a tuple and a constant.
    let (x, y) = unsafe {
        (
            if alen == 0 {
                &[][..]
            } else {
                std::slice::from_raw_parts(a, alen)
            },
            if blen == 0 {
                &[][..]
            } else {
                std::slice::from_raw_parts(b, blen)
            },
        )
    };
    x.cmp(y) as i32
}

/// Set probes for long IN lists (see `pred::in_set`): each searches members sorted
/// when the bee was made, so a probe costs O(log n) and the code calling it is the
/// same for any n. `words` and `n` come from the bee's constants.
///
/// # Safety
/// `words` points at `n` words that live as long as the calling code.
pub unsafe extern "C" fn bee_in_i64(words: *const u64, n: usize, v: i64) -> u8 {
    // SAFETY: per the contract above.
    let ks = unsafe { std::slice::from_raw_parts(words, n) };
    ks.binary_search_by(|&k| (k as i64).cmp(&v)).is_ok() as u8
}

/// As [`bee_in_i64`], for doubles in SQL's order (NaN equals NaN, -0 equals 0).
///
/// # Safety
/// As [`bee_in_i64`].
pub unsafe extern "C" fn bee_in_f64(words: *const u64, n: usize, v: f64) -> u8 {
    // SAFETY: per the contract above.
    let ks = unsafe { std::slice::from_raw_parts(words, n) };
    ks.binary_search_by(|&k| crate::generic::sql_float_cmp(f64::from_bits(k), v))
        .is_ok() as u8
}

/// As [`bee_in_i64`], for 128-bit values stored as (low, high) word pairs; `n` counts
/// words.
///
/// # Safety
/// As [`bee_in_i64`].
pub unsafe extern "C" fn bee_in_i128(words: *const u64, n: usize, lo: u64, hi: u64) -> u8 {
    // SAFETY: per the contract above.
    let ks = unsafe { std::slice::from_raw_parts(words, n) };
    let v = ((hi as u128) << 64 | lo as u128) as i128;
    let pair = |i: usize| ((ks[2 * i + 1] as u128) << 64 | ks[2 * i] as u128) as i128;
    let (mut lo_i, mut hi_i) = (0, n / 2);
    while lo_i < hi_i {
        let mid = (lo_i + hi_i) / 2;
        match pair(mid).cmp(&v) {
            std::cmp::Ordering::Less => lo_i = mid + 1,
            std::cmp::Ordering::Greater => hi_i = mid,
            std::cmp::Ordering::Equal => return 1,
        }
    }
    0
}

/// As [`bee_in_i64`], for byte strings: `offsets` holds `n` = members + 1 offsets into
/// `data` (member `i` is `data[offsets[i]..offsets[i + 1]]`), members sorted bytewise.
///
/// # Safety
/// As [`bee_in_i64`]; `data` holds every member; `(ptr, len)` is readable.
pub unsafe extern "C" fn bee_in_bytes(
    offsets: *const u64,
    n: usize,
    data: *const u8,
    ptr: *const u8,
    len: usize,
) -> u8 {
    // SAFETY: per the contract above.
    let (offsets, v) = unsafe {
        (
            std::slice::from_raw_parts(offsets, n),
            if len == 0 { &[][..] } else { std::slice::from_raw_parts(ptr, len) },
        )
    };
    let total = offsets[n - 1] as usize;
    // SAFETY: `data` holds `total` bytes (the last offset).
    let data = if total == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(data, total) } };
    let member = |i: usize| &data[offsets[i] as usize..offsets[i + 1] as usize];
    let (mut lo, mut hi) = (0, n - 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        match member(mid).cmp(v) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return 1,
        }
    }
    0
}

/// Copies `len` bytes from `src` to `dst` (non-overlapping).
///
/// # Safety
/// Both ranges must be valid (or `len` 0).
pub unsafe extern "C" fn bee_copy(dst: *mut u8, src: *const u8, len: usize) {
    if len != 0 {
        // SAFETY: the generated code passes an input value and room in `buf`.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
    }
}
