//! Checking answers: every engine must give the same answer to the same statement,
//! so that a fast wrong answer fails the run instead of winning it.

use crate::engine::Cell;

/// An answer in canonical form: rows sorted, so that engines free to return rows in
/// any order compare equal.
pub fn canonical(mut rows: Vec<Vec<Cell>>) -> Vec<Vec<Cell>> {
    for row in &mut rows {
        for cell in row.iter_mut() {
            // char(n) comes back padded from some engines and not from others.
            if let Cell::Text(s) = cell {
                let trimmed = s.trim_end_matches(' ').len();
                s.truncate(trimmed);
            }
        }
    }
    rows.sort_by(|a, b| {
        a.iter().zip(b).map(|(x, y)| order(x, y)).find(|o| o.is_ne()).unwrap_or(a.len().cmp(&b.len()))
    });
    rows
}

/// An order in which a number sorts the same whichever representation an engine
/// chose for it (3 and 3.0): NULL, then numbers by value, then text.
fn order(a: &Cell, b: &Cell) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let rank = |c: &Cell| match c {
        Cell::Null => 0,
        Cell::Int(_) | Cell::Float(_) => 1,
        Cell::Text(_) => 2,
    };
    match (a, b) {
        (Cell::Int(x), Cell::Int(y)) => x.cmp(y),
        (Cell::Text(x), Cell::Text(y)) => x.cmp(y),
        (Cell::Int(_) | Cell::Float(_), Cell::Int(_) | Cell::Float(_)) => {
            let f = |c: &Cell| match c {
                Cell::Int(v) => *v as f64,
                Cell::Float(v) => *v,
                _ => 0.0,
            };
            f(a).total_cmp(&f(b))
        }
        _ => rank(a).cmp(&rank(b)),
    }
    .then(Ordering::Equal)
}

/// Whether two cells are the same value: integers and text exactly, numbers of
/// different representations (3 vs 3.0) by value, floats within a relative 1e-9
/// (engines add in different orders).
pub fn same_cell(a: &Cell, b: &Cell) -> bool {
    match (a, b) {
        (Cell::Null, Cell::Null) => true,
        (Cell::Int(x), Cell::Int(y)) => x == y,
        (Cell::Text(x), Cell::Text(y)) => x == y,
        (Cell::Int(x), Cell::Float(y)) | (Cell::Float(y), Cell::Int(x)) => close(*x as f64, *y),
        (Cell::Float(x), Cell::Float(y)) => close(*x, *y),
        _ => false,
    }
}

fn close(x: f64, y: f64) -> bool {
    x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs())
}

/// `None` if the answers agree, else a short description of the first difference.
pub fn difference(expected: &[Vec<Cell>], actual: &[Vec<Cell>]) -> Option<String> {
    if expected.len() != actual.len() {
        return Some(format!("{} rows instead of {}", actual.len(), expected.len()));
    }
    for (i, (e, a)) in expected.iter().zip(actual).enumerate() {
        if e.len() != a.len() || e.iter().zip(a).any(|(x, y)| !same_cell(x, y)) {
            return Some(format!("row {}: {} instead of {}", i + 1, show(a), show(e)));
        }
    }
    None
}

fn show(row: &[Cell]) -> String {
    let cells: Vec<String> = row.iter().map(|c| c.to_string()).collect();
    let text = format!("({})", cells.join(", "));
    if text.len() > 160 { format!("{}…", &text[..text.floor_char_boundary(160)]) } else { text }
}

/// The median of a set of measurements (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_compare_by_value_in_any_order() {
        let a = canonical(vec![vec![Cell::Int(2), Cell::Text("b ".into())], vec![Cell::Int(1), Cell::Null]]);
        let b = canonical(vec![vec![Cell::Float(1.0), Cell::Null], vec![Cell::Int(2), Cell::Text("b".into())]]);
        assert_eq!(difference(&a, &b), None);
    }

    #[test]
    fn a_wrong_answer_is_a_difference() {
        let a = vec![vec![Cell::Int(1)], vec![Cell::Int(2)]];
        assert!(difference(&a, &[vec![Cell::Int(1)]]).unwrap().contains("1 rows instead of 2"));
        assert!(difference(&a, &[vec![Cell::Int(1)], vec![Cell::Int(3)]]).unwrap().starts_with("row 2"));
        assert!(difference(&[vec![Cell::Float(0.1 + 0.2)]], &[vec![Cell::Float(0.3)]]).is_none());
        assert!(difference(&[vec![Cell::Float(1.0)]], &[vec![Cell::Float(1.001)]]).is_some());
        assert!(difference(&[vec![Cell::Null]], &[vec![Cell::Int(0)]]).is_some());
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }
}
