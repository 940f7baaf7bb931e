//! Serialization of catalog objects. Format: a kind byte, then fields in order;
//! integers little-endian, strings as u32 length + UTF-8. Version 1.

use beedb_storage::PageId;

use super::{CheckDef, ColumnDef, FkAction, ForeignKeyDef, Identity, IndexDef, SequenceDef, SequenceOwner, TableDef, ViewDef};
use crate::error::{Error, Result};
use crate::types::{DataType, Date, Decimal, Interval, Timestamp, Value};

const FORMAT_VERSION: u8 = 1;
const KIND_TABLE: u8 = 1;
const KIND_VIEW: u8 = 2;
const KIND_META: u8 = 3;
const KIND_STATS: u8 = 4;
const KIND_SEQUENCE: u8 = 5;

pub enum Object {
    Table(TableDef),
    View(ViewDef),
    Meta { next_id: u32 },
    Stats { table: u32, stats: super::TableStats },
    Sequence(SequenceDef),
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// A value with its own type tag (statistics hold values of any column type).
    fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.u8(0),
            Value::Boolean(b) => {
                self.u8(1);
                self.u8(*b as u8);
            }
            Value::SmallInt(x) => {
                self.u8(2);
                self.u64(*x as i64 as u64);
            }
            Value::Integer(x) => {
                self.u8(3);
                self.u64(*x as i64 as u64);
            }
            Value::BigInt(x) => {
                self.u8(4);
                self.u64(*x as u64);
            }
            Value::Real(x) => {
                self.u8(5);
                self.u32(x.to_bits());
            }
            Value::Double(x) => {
                self.u8(6);
                self.f64(*x);
            }
            Value::Decimal(d) => {
                self.u8(7);
                self.0.extend_from_slice(&d.unscaled().to_le_bytes());
                self.u8(d.scale());
            }
            Value::Date(d) => {
                self.u8(8);
                self.u32(d.0 as u32);
            }
            Value::Timestamp(t) => {
                self.u8(9);
                self.u64(t.0 as u64);
            }
            Value::Interval(i) => {
                self.u8(10);
                self.u32(i.months as u32);
                self.u32(i.days as u32);
                self.u64(i.micros as u64);
            }
            Value::Char(s) => {
                self.u8(11);
                self.str(s);
            }
            Value::Varchar(s) => {
                self.u8(12);
                self.str(s);
            }
            Value::Text(s) => {
                self.u8(13);
                self.str(s);
            }
        }
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.u8(0),
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
        }
    }
    fn data_type(&mut self, t: &DataType) {
        match *t {
            DataType::SmallInt => self.u8(1),
            DataType::Integer => self.u8(2),
            DataType::BigInt => self.u8(3),
            DataType::Real => self.u8(4),
            DataType::Double => self.u8(5),
            DataType::Decimal { precision, scale } => {
                self.u8(6);
                self.u8(precision.unwrap_or(0));
                self.u8(scale);
            }
            DataType::Date => self.u8(7),
            DataType::Timestamp => self.u8(8),
            DataType::Interval => self.u8(9),
            DataType::Char(n) => {
                self.u8(10);
                self.u32(n);
            }
            DataType::Varchar(n) => {
                self.u8(11);
                self.u32(n.unwrap_or(0));
            }
            DataType::Text => self.u8(12),
            DataType::Boolean => self.u8(13),
        }
    }
}

struct Reader<'a>(&'a [u8]);

fn corrupt(what: &str) -> Error {
    Error::new(
        crate::error::ErrorKind::Storage,
        "XX001",
        format!("catalog entry is damaged: {what}"),
    )
}

impl Reader<'_> {
    fn u8(&mut self) -> Result<u8> {
        let (&b, rest) = self.0.split_first().ok_or_else(|| corrupt("truncated"))?;
        self.0 = rest;
        Ok(b)
    }
    fn u32(&mut self) -> Result<u32> {
        if self.0.len() < 4 {
            return Err(corrupt("truncated"));
        }
        let (b, rest) = self.0.split_at(4);
        self.0 = rest;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Result<u64> {
        let lo = self.u32()? as u64;
        let hi = self.u32()? as u64;
        Ok(lo | hi << 32)
    }
    fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_bits(self.u64()?))
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    fn value(&mut self) -> Result<Value> {
        Ok(match self.u8()? {
            0 => Value::Null,
            1 => Value::Boolean(self.u8()? != 0),
            2 => Value::SmallInt(self.u64()? as i64 as i16),
            3 => Value::Integer(self.u64()? as i64 as i32),
            4 => Value::BigInt(self.u64()? as i64),
            5 => Value::Real(f32::from_bits(self.u32()?)),
            6 => Value::Double(self.f64()?),
            7 => {
                let unscaled = (self.u64()? as u128 | (self.u64()? as u128) << 64) as i128;
                let scale = self.u8()?;
                Value::Decimal(Decimal::new(unscaled, scale).map_err(|_| corrupt("decimal out of range"))?)
            }
            8 => Value::Date(Date(self.u32()? as i32)),
            9 => Value::Timestamp(Timestamp(self.u64()? as i64)),
            10 => Value::Interval(Interval {
                months: self.u32()? as i32,
                days: self.u32()? as i32,
                micros: self.u64()? as i64,
            }),
            11 => Value::Char(self.str()?),
            12 => Value::Varchar(self.str()?),
            13 => Value::Text(self.str()?),
            t => return Err(corrupt(&format!("unknown value tag {t}"))),
        })
    }
    /// A count of following items, checked against the bytes left (each item takes at
    /// least `min_item` bytes), so a damaged count cannot ask for a huge allocation.
    fn count(&mut self, min_item: usize) -> Result<usize> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_item) > self.0.len() {
            return Err(corrupt("count beyond the entry"));
        }
        Ok(n)
    }
    fn str(&mut self) -> Result<String> {
        let n = self.u32()? as usize;
        if self.0.len() < n {
            return Err(corrupt("truncated string"));
        }
        let (b, rest) = self.0.split_at(n);
        self.0 = rest;
        String::from_utf8(b.to_vec()).map_err(|_| corrupt("invalid UTF-8"))
    }
    fn opt_str(&mut self) -> Result<Option<String>> {
        Ok(match self.u8()? {
            0 => None,
            _ => Some(self.str()?),
        })
    }
    fn data_type(&mut self) -> Result<DataType> {
        Ok(match self.u8()? {
            1 => DataType::SmallInt,
            2 => DataType::Integer,
            3 => DataType::BigInt,
            4 => DataType::Real,
            5 => DataType::Double,
            6 => {
                let p = self.u8()?;
                let s = self.u8()?;
                DataType::Decimal {
                    precision: (p != 0).then_some(p),
                    scale: s,
                }
            }
            7 => DataType::Date,
            8 => DataType::Timestamp,
            9 => DataType::Interval,
            10 => DataType::Char(self.u32()?),
            11 => {
                let n = self.u32()?;
                DataType::Varchar((n != 0).then_some(n))
            }
            12 => DataType::Text,
            13 => DataType::Boolean,
            t => return Err(corrupt(&format!("unknown type tag {t}"))),
        })
    }
}

pub fn encode_meta(next_id: u32) -> Vec<u8> {
    let mut w = Writer(vec![FORMAT_VERSION, KIND_META]);
    w.u32(next_id);
    w.0
}

pub fn encode_table(t: &TableDef) -> Vec<u8> {
    let mut w = Writer(vec![FORMAT_VERSION, KIND_TABLE]);
    w.u32(t.id);
    w.str(&t.name);
    w.u32(t.heap.0);
    w.u32(t.columns.len() as u32);
    for c in &t.columns {
        w.str(&c.name);
        w.data_type(&c.ty);
        w.u8(c.not_null as u8);
        w.opt_str(c.default.as_deref());
    }
    w.u32(t.indexes.len() as u32);
    for i in &t.indexes {
        w.str(&i.name);
        w.u32(i.root.0);
        w.u8(i.unique as u8 | (i.primary as u8) << 1 | (i.clustered as u8) << 2);
        w.u32(i.columns.len() as u32);
        for &c in &i.columns {
            w.u32(c as u32);
        }
    }
    // CHECK constraints, then FOREIGN KEYs; an entry written before they existed
    // ends before them.
    if !t.checks.is_empty() || !t.foreign_keys.is_empty() {
        w.u32(t.checks.len() as u32);
        for c in &t.checks {
            w.str(&c.name);
            w.str(&c.expr);
        }
    }
    if !t.foreign_keys.is_empty() {
        w.u32(t.foreign_keys.len() as u32);
        for f in &t.foreign_keys {
            w.str(&f.name);
            w.u32(f.parent);
            w.u8(fk_action_code(f.on_delete));
            w.u8(fk_action_code(f.on_update));
            w.u32(f.columns.len() as u32);
            for (c, p) in f.columns.iter().zip(&f.parent_columns) {
                w.str(c);
                w.str(p);
            }
        }
    }
    w.0
}

/// A table's statistics: its id, its row count, its columns' statistics, then its
/// page count (an entry written before column statistics existed ends after the row
/// count; one written before pages were counted, after the columns).
pub fn encode_stats(table: u32, st: &super::TableStats) -> Vec<u8> {
    let mut w = Writer(vec![FORMAT_VERSION, KIND_STATS]);
    w.u32(table);
    w.u64(st.rows);
    w.u32(st.columns.len() as u32);
    for c in &st.columns {
        w.f64(c.null_frac);
        w.f64(c.distinct);
        w.f64(c.avg_width);
        w.f64(c.correlation);
        w.value(&c.min);
        w.value(&c.max);
        w.u32(c.mcv.len() as u32);
        for (v, f) in &c.mcv {
            w.value(v);
            w.f64(*f);
        }
        w.u32(c.histogram.len() as u32);
        for v in &c.histogram {
            w.value(v);
        }
    }
    w.u64(st.pages);
    w.0
}

fn decode_column_stats(r: &mut Reader<'_>) -> Result<super::ColumnStats> {
    let null_frac = r.f64()?;
    let distinct = r.f64()?;
    let avg_width = r.f64()?;
    let correlation = r.f64()?;
    let min = r.value()?;
    let max = r.value()?;
    let n = r.count(9)?;
    let mut mcv = Vec::with_capacity(n);
    for _ in 0..n {
        mcv.push((r.value()?, r.f64()?));
    }
    let n = r.count(1)?;
    let mut histogram = Vec::with_capacity(n);
    for _ in 0..n {
        histogram.push(r.value()?);
    }
    Ok(super::ColumnStats { null_frac, distinct, avg_width, mcv, histogram, min, max, correlation })
}

pub fn encode_view(v: &ViewDef) -> Vec<u8> {
    let mut w = Writer(vec![FORMAT_VERSION, KIND_VIEW]);
    w.str(&v.name);
    w.str(&v.query);
    w.u32(v.columns.len() as u32);
    for c in &v.columns {
        w.str(c);
    }
    w.0
}

/// A sequence's definition: id, name, type, start, increment, bounds, cycle, then
/// its owner (0 none, 1 SERIAL, 2 identity ALWAYS, 3 identity BY DEFAULT) with the
/// owning table's id and column name.
pub fn encode_sequence(q: &SequenceDef) -> Vec<u8> {
    let mut w = Writer(vec![FORMAT_VERSION, KIND_SEQUENCE]);
    w.u32(q.id);
    w.str(&q.name);
    w.data_type(&q.ty);
    for v in [q.start, q.increment, q.min, q.max] {
        w.u64(v as u64);
    }
    w.u8(q.cycle as u8);
    match &q.owner {
        None => w.u8(0),
        Some(o) => {
            w.u8(match o.identity {
                None => 1,
                Some(Identity::Always) => 2,
                Some(Identity::ByDefault) => 3,
            });
            w.u32(o.table);
            w.str(&o.column);
        }
    }
    w.0
}

pub fn decode(bytes: &[u8]) -> Result<Object> {
    let mut r = Reader(bytes);
    let version = r.u8()?;
    if version != FORMAT_VERSION {
        return Err(corrupt(&format!("unknown catalog format version {version}")));
    }
    match r.u8()? {
        KIND_META => Ok(Object::Meta { next_id: r.u32()? }),
        KIND_STATS => {
            let table = r.u32()?;
            let rows = r.u64()?;
            let mut columns = Vec::new();
            let mut pages = 0;
            if !r.is_empty() {
                let n = r.count(34)?;
                columns.reserve(n);
                for _ in 0..n {
                    columns.push(decode_column_stats(&mut r)?);
                }
                if !r.is_empty() {
                    pages = r.u64()?;
                }
            }
            Ok(Object::Stats { table, stats: super::TableStats { rows, pages, columns } })
        }
        KIND_TABLE => {
            let id = r.u32()?;
            let name = r.str()?;
            let heap = PageId(r.u32()?);
            let ncols = r.u32()? as usize;
            let mut columns = Vec::with_capacity(ncols.min(4096));
            for _ in 0..ncols {
                columns.push(ColumnDef {
                    name: r.str()?,
                    ty: r.data_type()?,
                    not_null: r.u8()? != 0,
                    default: r.opt_str()?,
                });
            }
            let nidx = r.u32()? as usize;
            let mut indexes = Vec::with_capacity(nidx.min(4096));
            for _ in 0..nidx {
                let name = r.str()?;
                let root = PageId(r.u32()?);
                let flags = r.u8()?;
                let n = r.u32()? as usize;
                let mut cols = Vec::with_capacity(n.min(4096));
                for _ in 0..n {
                    let c = r.u32()? as usize;
                    if c >= columns.len() {
                        return Err(corrupt("index column out of range"));
                    }
                    cols.push(c);
                }
                indexes.push(IndexDef {
                    name,
                    columns: cols,
                    unique: flags & 1 != 0,
                    primary: flags & 2 != 0,
                    root,
                    clustered: flags & 4 != 0,
                });
            }
            let mut table = TableDef::new(id, name, columns, heap, indexes)?;
            if !r.is_empty() {
                let n = r.count(8)?;
                for _ in 0..n {
                    let name = r.str()?;
                    let expr = r.str()?;
                    table.add_check(CheckDef { name, expr });
                }
            }
            if !r.is_empty() {
                let n = r.count(8)?;
                for _ in 0..n {
                    let name = r.str()?;
                    let parent = r.u32()?;
                    let on_delete = fk_action(r.u8()?)?;
                    let on_update = fk_action(r.u8()?)?;
                    let k = r.count(8)?;
                    let mut columns = Vec::with_capacity(k);
                    let mut parent_columns = Vec::with_capacity(k);
                    for _ in 0..k {
                        columns.push(r.str()?);
                        parent_columns.push(r.str()?);
                    }
                    table.foreign_keys.push(ForeignKeyDef { name, columns, parent, parent_columns, on_delete, on_update });
                }
            }
            Ok(Object::Table(table))
        }
        KIND_VIEW => {
            let name = r.str()?;
            let query = r.str()?;
            let n = r.u32()? as usize;
            let mut columns = Vec::with_capacity(n.min(4096));
            for _ in 0..n {
                columns.push(r.str()?);
            }
            Ok(Object::View(ViewDef {
                name,
                query,
                columns,
            }))
        }
        KIND_SEQUENCE => {
            let id = r.u32()?;
            let name = r.str()?;
            let ty = r.data_type()?;
            let start = r.u64()? as i64;
            let increment = r.u64()? as i64;
            let min = r.u64()? as i64;
            let max = r.u64()? as i64;
            let cycle = r.u8()? != 0;
            let identity = match r.u8()? {
                0 => None,
                1 => Some(None),
                2 => Some(Some(Identity::Always)),
                3 => Some(Some(Identity::ByDefault)),
                k => return Err(corrupt(&format!("unknown sequence owner kind {k}"))),
            };
            let owner = match identity {
                None => None,
                Some(identity) => Some(SequenceOwner { table: r.u32()?, column: r.str()?, identity }),
            };
            Ok(Object::Sequence(SequenceDef { id, name, ty, start, increment, min, max, cycle, owner }))
        }
        k => Err(corrupt(&format!("unknown object kind {k}"))),
    }
}

fn fk_action_code(a: FkAction) -> u8 {
    match a {
        FkAction::NoAction => 0,
        FkAction::Restrict => 1,
        FkAction::Cascade => 2,
        FkAction::SetNull => 3,
        FkAction::SetDefault => 4,
    }
}

fn fk_action(code: u8) -> Result<FkAction> {
    Ok(match code {
        0 => FkAction::NoAction,
        1 => FkAction::Restrict,
        2 => FkAction::Cascade,
        3 => FkAction::SetNull,
        4 => FkAction::SetDefault,
        _ => return Err(corrupt("unknown foreign key action")),
    })
}
