//! The compiled maker: Cranelift machine code for scan, deform and form bees.
//! (Placeholder: being written.)

use crate::abi::{FormArgs, RunArgs};
use crate::spec::{RelationSpec, ScanSpec};

/// A compiled scan or deform routine.
pub type ScanFn = unsafe extern "C" fn(*mut RunArgs) -> u64;
/// A compiled form routine.
pub type FormFn = unsafe extern "C" fn(*mut FormArgs) -> u64;

/// The code generator: target ISA built once, cloned per module.
pub struct Jit {
    _private: (),
}

impl Jit {
    /// Builds the host ISA. `verify` runs Cranelift's IR verifier (tests).
    pub fn new(_verify: bool) -> Result<Jit, String> {
        Err("compiled maker not built yet".into())
    }
}

/// Owns the machine code of one bee; dropping it frees the code memory.
pub struct CompiledCode {
    /// Bytes of machine code.
    pub code_bytes: usize,
}

/// Compiles a scan (or deform) bee.
pub fn compile_scan(_jit: &Jit, _spec: &ScanSpec) -> Result<(CompiledCode, ScanFn), String> {
    Err("compiled maker not built yet".into())
}

/// Compiles a form bee.
pub fn compile_form(_jit: &Jit, _rel: &RelationSpec) -> Result<(CompiledCode, FormFn), String> {
    Err("compiled maker not built yet".into())
}
