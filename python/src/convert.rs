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

thread_local! {
    /// Recently converted numerics, direct-mapped by value: a column such as a
    /// quantity or a discount repeats few distinct values, and a `Decimal` is
    /// immutable, so one object can stand for every occurrence. Making one from its
    /// text costs about a microsecond, more than the rest of a row's conversion.
    static DECIMALS: std::cell::RefCell<Vec<Option<(i128, u8, Py<PyAny>)>>> =
        std::cell::RefCell::new((0..DECIMAL_CACHE_SLOTS).map(|_| None).collect());
}

fn decimal_to_py<'py>(py: Python<'py>, d: &Decimal) -> PyResult<Bound<'py, PyAny>> {
    let (unscaled, scale) = (d.unscaled(), d.scale());
    let slot = ((unscaled as u64 ^ (unscaled >> 64) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        >> 52) as usize
        ^ scale as usize;
    let slot = slot % DECIMAL_CACHE_SLOTS;
    let hit = DECIMALS.with(|c| match &c.borrow()[slot] {
        Some((u, s, obj)) if *u == unscaled && *s == scale => Some(obj.clone_ref(py)),
        _ => None,
    });
    if let Some(obj) = hit {
        return Ok(obj.into_bound(py));
    }
    let obj = decimal_class(py)?.call1((d.to_string(),))?;
    DECIMALS.with(|c| c.borrow_mut()[slot] = Some((unscaled, scale, obj.clone().unbind())));
    Ok(obj)
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
