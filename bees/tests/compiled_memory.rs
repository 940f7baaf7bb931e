//! Code memory of compiled bees is given back when they are dropped. (A test binary
//! of its own: it reads the process's mapped size, which other tests would disturb.)

use std::sync::Arc;

use beedb_bees::compiled::{self, Jit};
use beedb_bees::spec::{CmpOp, Const, Pred, RelationSpec, ScanSpec, ValueKind};
use beedb_storage::tuple::{ColumnFormat, TupleLayout};

/// The process's mapped size (VmSize), in KiB.
fn vm_size_kib() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmSize:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn many_bees_compiled_and_dropped_do_not_grow_memory() {
    if !std::path::Path::new("/proc/self/status").exists() {
        return;
    }
    let jit = Jit::new(false).unwrap();
    let kinds = [
        ValueKind::Int(4),
        ValueKind::Bytes,
        ValueKind::Float(8),
        ValueKind::Bytes,
    ];
    let cols = [
        ColumnFormat::fixed(4, false),
        ColumnFormat::variable(true),
        ColumnFormat::fixed(8, true),
        ColumnFormat::variable(false),
    ];
    let rel =
        Arc::new(RelationSpec::new(TupleLayout::new(&cols).unwrap(), kinds.to_vec()).unwrap());
    let make = |i: usize| {
        let spec = ScanSpec {
            relation: rel.clone(),
            predicate: Some(Pred::And(vec![
                Pred::Cmp {
                    attr: 0,
                    op: CmpOp::Lt,
                    value: Const::Int(i as i64),
                },
                Pred::Cmp {
                    attr: 1,
                    op: CmpOp::Ge,
                    value: Const::Bytes(vec![b'x'; 40 + i % 7]),
                },
            ])),
            outputs: vec![1, 2, 3],
        };
        let (code, _f) = compiled::compile_scan(&jit, &spec).unwrap();
        let (form, _g) = compiled::compile_form(&jit, &rel).unwrap();
        drop(code);
        drop(form);
    };
    // Warm up allocators.
    (0..200).for_each(make);
    // The measurement sees code that is kept: 500 kept bees grow VmSize.
    let before = vm_size_kib();
    let kept: Vec<_> = (0..500)
        .map(|_| compiled::compile_form(&jit, &rel).unwrap())
        .collect();
    let after = vm_size_kib();
    assert!(
        after >= before + 500 * 4,
        "kept bees: {before} -> {after} KiB"
    );
    drop(kept);
    let before = vm_size_kib();
    // 2000 bees of ≥ 4 KiB of mapped code each would add ≥ 8 MiB if leaked.
    (0..1000).for_each(make);
    let after = vm_size_kib();
    assert!(
        after <= before + 2048,
        "VmSize grew from {before} KiB to {after} KiB over 2000 compiled and dropped bees"
    );
}
