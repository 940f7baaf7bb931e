//! Python objects ⇄ SQL values (the table is in `python/README.md`).

use beedb::Value;
use beedb::types::{Date, Decimal, Interval, Timestamp};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDate, PyDateAccess, PyDateTime, PyDelta, PyDeltaAccess, PyFloat, PyInt,
    PyString, PyTime, PyTimeAccess,
};

use crate::boundary_error;

const MICROS_PER_DAY: i64 = 86_400_000_000;

static DECIMAL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn decimal_class(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    DECIMAL.import(py, "decimal", "Decimal")
}

/// A parameter sequence (list, tuple or any sequence; not a mapping, not a string).
pub fn params_to_values(params: &Bound<'_, PyAny>) -> PyResult<Vec<Value>> {
    if params.is_none() {
        return Ok(Vec::new());
    }
    if params.is_instance_of::<PyString>() || params.is_instance_of::<PyBytes>() {
        return Err(boundary_error(
            "ProgrammingError",
            "",
            "parameters must be a sequence (a list or tuple), not a string".into(),
        ));
    }
    if params.is_instance_of::<pyo3::types::PyDict>() {
        return Err(boundary_error(
            "ProgrammingError",
            "",
            "named parameters are not supported: paramstyle is 'qmark' (?) or 'numeric' ($1)".into(),
        ));
    }
    let mut values = Vec::new();
    for (i, item) in params.try_iter()?.enumerate() {
        values.push(to_value(&item?).map_err(|e| annotate(e, i + 1))?);
    }
    Ok(values)
}

fn annotate(e: PyErr, n: usize) -> PyErr {
    Python::attach(|py| {
        let value = e.value(py);
        if let Ok(args) = value.getattr("args")
            && let Ok((class, state, message, pos, detail, hint)) =
                args.extract::<(String, String, String, Option<usize>, Option<String>, Option<String>)>()
        {
            return crate::RawError::new_err((class, state, format!("parameter {n}: {message}"), pos, detail, hint));
        }
        e
    })
}

/// One Python value as an SQL value.
pub fn to_value(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    let py = obj.py();
    if obj.is_none() {
        return Ok(Value::Null);
    }
    // A Decimal this module made (a function returning an argument it got) is known.
    if obj.get_type().is(decimal_class(py)?)
        && let Some(d) = cached_decimal(obj)
    {
        return Ok(Value::Decimal(d));
    }
    // bool before int: bool is a subclass of int.
    if obj.is_instance_of::<PyBool>() {
        return Ok(Value::Boolean(obj.extract::<bool>()?));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(v) = obj.extract::<i64>() {
            return Ok(Value::BigInt(v));
        }
        // Beyond 64 bits: an exact numeric, as long as it has at most 38 digits.
        let text = obj.str()?.to_string();
        return Decimal::parse(&text).map(Value::Decimal).map_err(|_| {
            boundary_error(
                "DataError",
                "22003",
                format!("integer {text} is out of range (BeeDB's numeric holds 38 digits)"),
            )
        });
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Value::Double(obj.extract::<f64>()?));
    }
    if obj.is_instance_of::<PyString>() {
        return match obj.extract::<String>() {
            Ok(s) => Ok(Value::Text(s)),
            // Lone surrogates cannot be encoded in UTF-8.
            Err(_) => Err(boundary_error(
                "DataError",
                "22021",
                "invalid byte sequence for encoding \"UTF8\": the string holds a lone surrogate".into(),
            )),
        };
    }
    if obj.is_instance_of::<PyBytes>() || obj.is_instance_of::<PyByteArray>() || obj.is_instance_of::<pyo3::types::PyMemoryView>() {
        return Err(boundary_error(
            "NotSupportedError",
            "0A000",
            "bytes parameters are not supported: BeeDB has no binary (bytea) type yet".into(),
        ));
    }
    // datetime before date: datetime is a subclass of date.
    if let Ok(dt) = obj.cast::<PyDateTime>() {
        let dt = if dt.getattr("tzinfo")?.is_none() {
            dt.clone()
        } else {
            // Timestamps are UTC without a zone (like `now()`): an aware datetime is
            // stored as its UTC wall time.
            let utc = py.import("datetime")?.getattr("timezone")?.getattr("utc")?;
            let in_utc = dt.call_method1("astimezone", (utc,))?;
            in_utc.call_method("replace", (), Some(&[("tzinfo", py.None())].into_py_dict(py)?))?.cast_into::<PyDateTime>()?
        };
        let days = date_days(dt.get_year(), dt.get_month(), dt.get_day())?;
        let micros = ((dt.get_hour() as i64 * 60 + dt.get_minute() as i64) * 60 + dt.get_second() as i64) * 1_000_000
            + dt.get_microsecond() as i64;
        return Ok(Value::Timestamp(Timestamp(days * MICROS_PER_DAY + micros)));
    }
    if let Ok(d) = obj.cast::<PyDate>() {
        let days = date_days(d.get_year(), d.get_month(), d.get_day())?;
        return Ok(Value::Date(Date(days as i32)));
    }
    if let Ok(td) = obj.cast::<PyDelta>() {
        let micros = td.get_seconds() as i64 * 1_000_000 + td.get_microseconds() as i64;
        return Ok(Value::Interval(Interval::new(0, td.get_days(), micros)));
    }
    if obj.is_instance(decimal_class(py)?)? {
        let text = obj.str()?.to_string();
        return Decimal::parse(&text).map(Value::Decimal).map_err(|e| {
            let message = if obj.call_method0("is_finite").and_then(|f| f.extract::<bool>()).unwrap_or(true) {
                format!("Decimal {text} does not fit BeeDB's numeric (38 digits): {e}")
            } else {
                format!("Decimal {text} has no SQL numeric value")
            };
            boundary_error("DataError", "22003", message)
        });
    }
    if obj.is_instance_of::<PyTime>() {
        return Err(boundary_error(
            "NotSupportedError",
            "0A000",
            "time parameters are not supported: BeeDB has no time type yet".into(),
        ));
    }
    Err(boundary_error(
        "ProgrammingError",
        "",
        format!("type {} is not supported as a parameter", obj.get_type().name()?),
    ))
}

use pyo3::types::IntoPyDict;

fn date_days(year: i32, month: u8, day: u8) -> PyResult<i64> {
    Date::from_ymd(year as i64, month as u32, day as u32)
        .map(|d| d.0 as i64)
        .ok_or_else(|| boundary_error("DataError", "22008", format!("date {year}-{month}-{day} out of range")))
}

/// One SQL value as a Python object.
pub fn value_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Boolean(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::SmallInt(x) => (*x).into_pyobject(py)?.into_any(),
        Value::Integer(x) => (*x).into_pyobject(py)?.into_any(),
        Value::BigInt(x) => (*x).into_pyobject(py)?.into_any(),
        Value::Real(x) => (*x as f64).into_pyobject(py)?.into_any(),
        Value::Double(x) => (*x).into_pyobject(py)?.into_any(),
        Value::Decimal(d) => decimal_to_py(py, d)?,
        Value::Date(d) => {
            let (y, m, day) = d.ymd();
            let year = python_year(y)?;
            PyDate::new(py, year, m as u8, day as u8)?.into_any()
        }
        Value::Timestamp(t) => {
            let (y, m, day) = t.date().ymd();
            let year = python_year(y)?;
            let tod = t.time_of_day();
            let secs = tod / 1_000_000;
            PyDateTime::new(
                py,
                year,
                m as u8,
                day as u8,
                (secs / 3600) as u8,
                (secs / 60 % 60) as u8,
                (secs % 60) as u8,
                (tod % 1_000_000) as u32,
                None,
            )?
            .into_any()
        }
        Value::Interval(iv) => {
            // A timedelta has no months: a month counts 30 days, as PostgreSQL's
            // interval arithmetic (and psycopg) take it.
            let days = iv.months as i64 * 30 + iv.days as i64 + iv.micros.div_euclid(MICROS_PER_DAY);
            let rest = iv.micros.rem_euclid(MICROS_PER_DAY);
            let days = i32::try_from(days)
                .map_err(|_| boundary_error("DataError", "22008", format!("interval {iv} out of range for timedelta")))?;
            PyDelta::new(py, days, (rest / 1_000_000) as i32, (rest % 1_000_000) as i32, true)
                .map_err(|_| boundary_error("DataError", "22008", format!("interval {iv} out of range for timedelta")))?
                .into_any()
        }
        Value::Char(s) | Value::Varchar(s) | Value::Text(s) => PyString::new(py, s).into_any(),
    })
}

/// Slots of the cache of recently made `decimal.Decimal` objects.
const DECIMAL_CACHE_SLOTS: usize = 4096;

/// Recently converted numerics, direct-mapped by value: a column such as a quantity
/// or a discount repeats few distinct values, and a `Decimal` is immutable, so one
/// object can stand for every occurrence. Making one from its text costs about a
/// microsecond, more than the rest of a row's conversion. One cache for the process
/// (used with the GIL held): a Python function called on a stream's thread and the
/// cursor reading its results on another share it, so a value a function returned
/// as it got it (`abs` of a positive number) is not made twice.
///
/// `by_object` maps an object the cache holds back to its value (direct-mapped by
/// address), so such a returned `Decimal` becomes a value again without its text
/// being made and parsed. An entry is trusted only while `slots` still holds that
/// object (alive, so its address is not reused).
struct DecimalCache {
    slots: Vec<Option<(i128, u8, Py<PyAny>)>>,
    by_object: Vec<(usize, i128, u8)>,
}

static DECIMALS: std::sync::Mutex<DecimalCache> =
    std::sync::Mutex::new(DecimalCache { slots: Vec::new(), by_object: Vec::new() });

fn decimal_slot(unscaled: i128, scale: u8) -> usize {
    let h = ((unscaled as u64 ^ (unscaled >> 64) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize
        ^ scale as usize;
    h % DECIMAL_CACHE_SLOTS
}

fn object_slot(addr: usize) -> usize {
    ((addr as u64 >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize % DECIMAL_CACHE_SLOTS
}

fn decimal_cache() -> std::sync::MutexGuard<'static, DecimalCache> {
    let mut c = DECIMALS.lock().unwrap_or_else(|p| p.into_inner());
    if c.slots.is_empty() {
        c.slots = (0..DECIMAL_CACHE_SLOTS).map(|_| None).collect();
        c.by_object = vec![(0, 0, 0); DECIMAL_CACHE_SLOTS];
    }
    c
}

fn decimal_to_py<'py>(py: Python<'py>, d: &Decimal) -> PyResult<Bound<'py, PyAny>> {
    let (unscaled, scale) = (d.unscaled(), d.scale());
    let slot = decimal_slot(unscaled, scale);
    if let Some((u, s, obj)) = &decimal_cache().slots[slot]
        && *u == unscaled
        && *s == scale
    {
        return Ok(obj.clone_ref(py).into_bound(py));
    }
    // Made without the cache's lock held (a collection it sets off may run Python
    // code that converts a value too).
    let obj = make_decimal(py, unscaled, scale)?;
    let addr = obj.as_ptr() as usize;
    let old = {
        let mut c = decimal_cache();
        c.by_object[object_slot(addr)] = (addr, unscaled, scale);
        c.slots[slot].replace((unscaled, scale, obj.clone().unbind()))
    };
    drop(old); // its decref may free an object: outside the lock
    Ok(obj)
}

/// A new `decimal.Decimal` of `unscaled` × 10^-`scale`: written field by field when
/// [`direct_decimals`] found that it can be (one allocation, no text), else made from
/// its text.
fn make_decimal<'py>(py: Python<'py>, unscaled: i128, scale: u8) -> PyResult<Bound<'py, PyAny>> {
    let class = decimal_class(py)?;
    if direct_decimals(py) {
        // SAFETY: `direct_decimals` checked that `class` is CPython's C `Decimal` with
        // the object layout `write_decimal` writes, and that what it writes reads back
        // as the same numbers.
        return unsafe { write_decimal(py, class, unscaled, scale) };
    }
    let mut text = [0u8; DECIMAL_TEXT_MAX];
    class.call1((decimal_text(unscaled, scale, &mut text),))
}

/// CPython's `_decimal` object (Modules/_decimal/_decimal.c, CPython 3.x on 64-bit
/// platforms): `PyObject_HEAD` (16 bytes), `Py_hash_t hash` (-1: not computed yet),
/// then libmpdec's `mpd_t { uint8_t flags; mpd_ssize_t exp, digits, len, alloc;
/// mpd_uint_t *data }` whose `data` points at the object's own four words. A
/// coefficient is held in words of base 10^19, least significant first.
mod mpd {
    pub const BASICSIZE: usize = 104;
    pub const HASH: usize = 16;
    pub const FLAGS: usize = 24;
    pub const EXP: usize = 32;
    pub const DIGITS: usize = 40;
    pub const LEN: usize = 48;
    pub const ALLOC: usize = 56;
    pub const DATA_PTR: usize = 64;
    pub const DATA: usize = 72;
    pub const MINALLOC: isize = 4;
    pub const NEG: u8 = 1;
    pub const STATIC: u8 = 16;
    pub const STATIC_DATA: u8 = 32;
    pub const RADIX: u128 = 10_000_000_000_000_000_000;
}

/// Makes a `Decimal` by writing its fields as `_decimal`'s own constructor does (see
/// [`mpd`]). Any `i128` fits the object's four words (at most three are needed).
///
/// # Safety
/// `class` must be a type with the layout of [`mpd`] (checked by [`direct_decimals`]).
unsafe fn write_decimal<'py>(
    py: Python<'py>,
    class: &Bound<'py, PyAny>,
    unscaled: i128,
    scale: u8,
) -> PyResult<Bound<'py, PyAny>> {
    let u = unscaled.unsigned_abs();
    let words = [(u % mpd::RADIX) as u64, (u / mpd::RADIX % mpd::RADIX) as u64, (u / mpd::RADIX / mpd::RADIX) as u64, 0];
    let len: isize = if words[2] != 0 { 3 } else if words[1] != 0 { 2 } else { 1 };
    let digits = if u == 0 { 1 } else { u.ilog10() as isize + 1 };
    let flags = mpd::STATIC | mpd::STATIC_DATA | if unscaled < 0 { mpd::NEG } else { 0 };
    unsafe {
        let obj = pyo3::ffi::_PyObject_New(class.as_ptr() as *mut pyo3::ffi::PyTypeObject);
        if obj.is_null() {
            return Err(PyErr::fetch(py));
        }
        let base = obj as *mut u8;
        let data = base.add(mpd::DATA) as *mut u64;
        for (i, w) in words.iter().enumerate() {
            data.add(i).write(*w);
        }
        (base.add(mpd::HASH) as *mut isize).write(-1);
        base.add(mpd::FLAGS).write(flags);
        (base.add(mpd::EXP) as *mut isize).write(-(scale as isize));
        (base.add(mpd::DIGITS) as *mut isize).write(digits);
        (base.add(mpd::LEN) as *mut isize).write(len);
        (base.add(mpd::ALLOC) as *mut isize).write(mpd::MINALLOC);
        (base.add(mpd::DATA_PTR) as *mut *mut u64).write(data);
        Ok(Bound::from_owned_ptr(py, obj))
    }
}

static DIRECT_DECIMALS: PyOnceLock<bool> = PyOnceLock::new();

/// Whether `Decimal`s can be written field by field ([`write_decimal`]): the running
/// `decimal.Decimal` is CPython's C implementation on a 64-bit build, its objects have
/// [`mpd`]'s size, and a set of values written so (zero, signs, scales, one to three
/// words, the 38-digit limits) equal, print, hash and split (`as_tuple`) as the same
/// values made from their text. Checked once; otherwise numerics are made from text.
fn direct_decimals(py: Python<'_>) -> bool {
    *DIRECT_DECIMALS.get_or_init(py, || check_direct_decimals(py).unwrap_or(false))
}

fn check_direct_decimals(py: Python<'_>) -> PyResult<bool> {
    let class = decimal_class(py)?;
    let sys = py.import("sys")?;
    let c_decimal = sys.getattr("modules")?.get_item("_decimal").ok();
    let is_c = match &c_decimal {
        Some(m) => m.getattr("Decimal")?.is(class),
        None => false,
    };
    // The object is allocated without a pre-header: a type whose instances carry
    // one (a garbage-collected type, as `Decimal` is from CPython 3.13 on, or one
    // with a managed dict or weak-reference list) would be freed at the wrong
    // address. Such a type takes the text path.
    const PRE_HEADER_FLAGS: u64 = (1 << 14) | (1 << 4) | (1 << 3); // HAVE_GC, MANAGED_DICT, MANAGED_WEAKREF
    if !is_c
        || sys.getattr("implementation")?.getattr("name")?.extract::<String>()? != "cpython"
        || sys.getattr("maxsize")?.extract::<i64>()? != i64::MAX
        || class.getattr("__basicsize__")?.extract::<usize>()? != mpd::BASICSIZE
        || class.getattr("__flags__")?.extract::<u64>()? & PRE_HEADER_FLAGS != 0
    {
        return Ok(false);
    }
    let big = 10i128.pow(38) - 1;
    let word = mpd::RADIX as i128;
    let samples: [(i128, u8); 18] = [
        (0, 0),
        (0, 2),
        (1, 0),
        (-1, 0),
        (5, 2),
        (-5, 3),
        (1_234_567, 2),
        (-1_234_567, 2),
        (word - 1, 0),
        (word, 0),
        (-(word + 1), 3),
        (word * word - 1, 5),
        (word * word, 1),
        (big, 0),
        (-big, 38),
        (i64::MAX as i128, 4),
        (i64::MIN as i128, 4),
        (1, 38),
    ];
    for (unscaled, scale) in samples {
        // SAFETY: the type is the C Decimal of this layout's size (checked above); the
        // comparison below checks what was written.
        let direct = unsafe { write_decimal(py, class, unscaled, scale)? };
        let mut text = [0u8; DECIMAL_TEXT_MAX];
        let parsed = class.call1((decimal_text(unscaled, scale, &mut text),))?;
        let same = direct.eq(&parsed)?
            && direct.str()?.to_str()? == parsed.str()?.to_str()?
            && direct.hash()? == parsed.hash()?
            && direct.call_method0("as_tuple")?.eq(parsed.call_method0("as_tuple")?)?
            && direct.call_method0("is_normal")?.eq(parsed.call_method0("is_normal")?)?;
        if !same {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Room for a numeric's text: a sign, 39 digits, a point and up to 40 zeros before them.
const DECIMAL_TEXT_MAX: usize = 96;

/// `unscaled` × 10^-`scale` as text with exactly `scale` digits after the point (what
/// `Decimal`'s `Display` writes, so `decimal.Decimal` keeps the scale), written into
/// `buf` from its end without the formatting machinery: a row's numerics that miss
/// the cache are made from this text.
fn decimal_text(unscaled: i128, scale: u8, buf: &mut [u8; DECIMAL_TEXT_MAX]) -> &str {
    let scale = (scale as usize).min(40);
    let mut i = buf.len();
    let mut n = 0usize;
    macro_rules! digits {
        ($u:expr) => {{
            let mut u = $u;
            loop {
                if n == scale && scale > 0 {
                    i -= 1;
                    buf[i] = b'.';
                }
                i -= 1;
                buf[i] = b'0' + (u % 10) as u8;
                u /= 10;
                n += 1;
                if u == 0 && n > scale {
                    break;
                }
            }
        }};
    }
    let u = unscaled.unsigned_abs();
    match u64::try_from(u) {
        Ok(u) => digits!(u),
        Err(_) => digits!(u),
    }
    if unscaled < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    // Only ASCII digits, '.' and '-' were written.
    std::str::from_utf8(&buf[i..]).unwrap_or("NaN")
}

/// The value of a `Decimal` that the cache made, if `obj` is one it still holds.
fn cached_decimal(obj: &Bound<'_, PyAny>) -> Option<Decimal> {
    let addr = obj.as_ptr() as usize;
    let c = decimal_cache();
    let (a, unscaled, scale) = c.by_object[object_slot(addr)];
    if a != addr {
        return None;
    }
    match &c.slots[decimal_slot(unscaled, scale)] {
        Some((u, s, held)) if *u == unscaled && *s == scale && held.as_ptr() as usize == addr => {
            Decimal::new(unscaled, scale).ok()
        }
        _ => None,
    }
}

/// Python's dates stop at year 9999; BeeDB's go to 294276.
fn python_year(y: i64) -> PyResult<i32> {
    if (1..=9999).contains(&y) {
        Ok(y as i32)
    } else {
        Err(boundary_error(
            "DataError",
            "22008",
            format!("year {y} is out of range for Python's datetime (1 to 9999)"),
        ))
    }
}

/// Row `k` of a batch's column (typed slices, see [`beedb::ColumnSlice`]) as a Python
/// object, without making a [`Value`] for the common types: integers, floats,
/// booleans, text (no `String` copy) and `Dec64` decimals; the others go through
/// [`value_to_py`].
pub fn slice_value_to_py<'py>(
    py: Python<'py>,
    ty: &beedb::DataType,
    s: &beedb::ColumnSlice<'_>,
    k: usize,
) -> PyResult<Bound<'py, PyAny>> {
    use beedb::{ColumnValues as V, DataType as T};
    if s.nulls.is_some_and(|n| n[k]) {
        return Ok(py.None().into_bound(py));
    }
    Ok(match (s.values, ty) {
        (V::Bool(v), _) => PyBool::new(py, v[k]).to_owned().into_any(),
        (V::I16(v), _) => v[k].into_pyobject(py)?.into_any(),
        (V::I32(v), T::Date) => value_to_py(py, &Value::Date(Date(v[k])))?,
        (V::I32(v), _) => v[k].into_pyobject(py)?.into_any(),
        (V::I64(v), T::Timestamp) => value_to_py(py, &Value::Timestamp(Timestamp(v[k])))?,
        (V::I64(v), _) => v[k].into_pyobject(py)?.into_any(),
        (V::F32(v), _) => (v[k] as f64).into_pyobject(py)?.into_any(),
        (V::F64(v), _) => v[k].into_pyobject(py)?.into_any(),
        (V::Dec64 { scale, values }, _) => decimal_to_py(py, &Decimal::from_scaled_i64(values[k], scale))?,
        (V::Dec(v), _) => decimal_to_py(py, &v[k])?,
        (V::Interval(v), _) => value_to_py(py, &Value::Interval(v[k]))?,
        (V::Str { offsets, bytes }, _) => {
            let b = &bytes[offsets[k] as usize..offsets[k + 1] as usize];
            // The engine's strings are UTF-8 and cut at char boundaries (a `StrVec`
            // holds a `String`); checked all the same, as it costs little.
            match std::str::from_utf8(b) {
                Ok(text) => PyString::new(py, text).into_any(),
                Err(e) => return Err(boundary_error("InternalError", "XX000", e.to_string())),
            }
        }
    })
}
