//! A plan node's output columns, shared between nodes.
//!
//! A join's output is its left input's columns then its right input's. Held as a
//! vector per node, a left-deep chain of n joins (a FROM list, a `JOIN … ON` chain,
//! an outer-join chain the optimizer may not reorder) held 1 + 2 + … + n column
//! entries: 4,000 one-column tables took 800 MB, 7,500 aborted under a 1 GB cap
//! (issue 16). A [`Schema`] is instead an immutable rope: leaves of columns under
//! concatenation nodes, every node behind an `Arc`, so a join's schema shares its
//! inputs' and adds O(log n) small nodes. The tree is kept height-balanced (AVL on
//! the concatenation nodes: the two sides' heights differ by at most one), so
//! looking up column `i` takes O(log n) steps whatever the shape of the plan, and
//! iterating takes O(columns). A schema of one leaf (almost every node that is not
//! a join) iterates as the slice it is.
//!
//! Why not rebuild long cross products as balanced join trees instead: the binder's
//! plan is left-deep before any optimizer pass runs, outer joins cannot be
//! regrouped, and a balanced tree of n joins still holds n·log n entries.

use std::fmt;
use std::sync::Arc;

use super::OutputColumn;

/// The output columns of a plan node (see the module comment). Cloning is O(1).
#[derive(Clone, Default)]
pub struct Schema(Option<Arc<Rope>>);

enum Rope {
    Leaf(Vec<OutputColumn>),
    Cat { left: Arc<Rope>, right: Arc<Rope>, len: usize, height: u32 },
}

impl Rope {
    fn len(&self) -> usize {
        match self {
            Rope::Leaf(v) => v.len(),
            Rope::Cat { len, .. } => *len,
        }
    }

    fn height(&self) -> u32 {
        match self {
            Rope::Leaf(_) => 0,
            Rope::Cat { height, .. } => *height,
        }
    }

    fn sides(&self) -> (&Arc<Rope>, &Arc<Rope>) {
        match self {
            Rope::Cat { left, right, .. } => (left, right),
            Rope::Leaf(_) => unreachable!("a leaf has height 0 and is never split"),
        }
    }
}

/// A concatenation node of two sides whose heights differ by at most one.
fn cat(left: Arc<Rope>, right: Arc<Rope>) -> Arc<Rope> {
    let len = left.len() + right.len();
    let height = left.height().max(right.height()) + 1;
    Arc::new(Rope::Cat { left, right, len, height })
}

/// `a ++ b`, balanced: the AVL join without a middle key. New nodes only along
/// the taller tree's spine down to the other's height: O(|h(a) − h(b)| + 1).
fn join(a: &Arc<Rope>, b: &Arc<Rope>) -> Arc<Rope> {
    let (ha, hb) = (a.height(), b.height());
    if ha > hb + 1 {
        join_right(a, b)
    } else if hb > ha + 1 {
        join_left(a, b)
    } else {
        cat(a.clone(), b.clone())
    }
}

/// `a ++ b` where `a` is at least two taller: `b` goes down `a`'s right spine.
fn join_right(a: &Arc<Rope>, b: &Arc<Rope>) -> Arc<Rope> {
    let (l, r) = a.sides();
    let t = if r.height() <= b.height() + 1 { cat(r.clone(), b.clone()) } else { join_right(r, b) };
    if t.height() <= l.height() + 1 {
        return cat(l.clone(), t);
    }
    // `t` is two taller than `l`: rotate left (twice when `t`'s inner side is taller).
    let (tl, tr) = t.sides();
    if tl.height() <= tr.height() {
        cat(cat(l.clone(), tl.clone()), tr.clone())
    } else {
        let (tll, tlr) = tl.sides();
        cat(cat(l.clone(), tll.clone()), cat(tlr.clone(), tr.clone()))
    }
}

/// `a ++ b` where `b` is at least two taller: `a` goes down `b`'s left spine.
fn join_left(a: &Arc<Rope>, b: &Arc<Rope>) -> Arc<Rope> {
    let (l, r) = b.sides();
    let t = if l.height() <= a.height() + 1 { cat(a.clone(), l.clone()) } else { join_left(a, l) };
    if t.height() <= r.height() + 1 {
        return cat(t, r.clone());
    }
    let (tl, tr) = t.sides();
    if tr.height() <= tl.height() {
        cat(tl.clone(), cat(tr.clone(), r.clone()))
    } else {
        let (trl, trr) = tr.sides();
        cat(cat(tl.clone(), trl.clone()), cat(trr.clone(), r.clone()))
    }
}

impl Schema {
    pub fn new() -> Schema {
        Schema(None)
    }

    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |r| r.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Column `i`, in O(log n).
    pub fn get(&self, mut i: usize) -> Option<&OutputColumn> {
        let mut node = self.0.as_deref()?;
        loop {
            match node {
                Rope::Leaf(v) => return v.get(i),
                Rope::Cat { left, right, len, .. } => {
                    if i >= *len {
                        return None;
                    }
                    let n = left.len();
                    if i < n {
                        node = left;
                    } else {
                        i -= n;
                        node = right;
                    }
                }
            }
        }
    }

    pub fn first(&self) -> Option<&OutputColumn> {
        self.get(0)
    }

    pub fn last(&self) -> Option<&OutputColumn> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    pub fn iter(&self) -> Iter<'_> {
        match self.0.as_deref() {
            None => Iter { leaf: [].iter(), stack: Vec::new() },
            Some(Rope::Leaf(v)) => Iter { leaf: v.iter(), stack: Vec::new() },
            Some(node) => Iter { leaf: [].iter(), stack: vec![node] },
        }
    }

    /// This schema followed by `other`, sharing both (O(log n) new nodes).
    pub fn concat(&self, other: &Schema) -> Schema {
        match (&self.0, &other.0) {
            (None, _) => other.clone(),
            (_, None) => self.clone(),
            (Some(a), Some(b)) if a.len() == 0 => Schema(Some(b.clone())),
            (Some(a), Some(b)) if b.len() == 0 => Schema(Some(a.clone())),
            (Some(a), Some(b)) => Schema(Some(join(a, b))),
        }
    }

    /// Columns `range` as a schema of their own: this one shared when it is all of
    /// it, else copied.
    pub fn slice(&self, range: std::ops::Range<usize>) -> Schema {
        if range.start == 0 && range.end == self.len() {
            return self.clone();
        }
        let n = range.len();
        self.iter().skip(range.start).take(n).cloned().collect()
    }

    pub fn to_vec(&self) -> Vec<OutputColumn> {
        self.iter().cloned().collect()
    }

    /// The columns as one vector to change in place (copied into a single leaf
    /// first unless this schema already is one it alone holds).
    pub fn to_mut(&mut self) -> &mut Vec<OutputColumn> {
        let flat = match self.0.as_deref() {
            Some(Rope::Leaf(_)) => None,
            _ => Some(self.to_vec()),
        };
        if let Some(v) = flat {
            self.0 = Some(Arc::new(Rope::Leaf(v)));
        }
        let rope = self.0.as_mut().expect("made above");
        if Arc::get_mut(rope).is_none() {
            let Rope::Leaf(v) = &**rope else { unreachable!("a leaf") };
            *rope = Arc::new(Rope::Leaf(v.clone()));
        }
        match Arc::get_mut(rope) {
            Some(Rope::Leaf(v)) => v,
            _ => unreachable!("an unshared leaf"),
        }
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, OutputColumn> {
        self.to_mut().iter_mut()
    }

    pub fn push(&mut self, column: OutputColumn) {
        self.extend(std::iter::once(column));
    }
}

impl From<Vec<OutputColumn>> for Schema {
    fn from(v: Vec<OutputColumn>) -> Schema {
        if v.is_empty() { Schema(None) } else { Schema(Some(Arc::new(Rope::Leaf(v)))) }
    }
}

impl FromIterator<OutputColumn> for Schema {
    fn from_iter<I: IntoIterator<Item = OutputColumn>>(iter: I) -> Schema {
        Schema::from(iter.into_iter().collect::<Vec<_>>())
    }
}

/// Appends columns as a new leaf (the columns before are shared, not copied).
impl Extend<OutputColumn> for Schema {
    fn extend<I: IntoIterator<Item = OutputColumn>>(&mut self, iter: I) {
        let more = Schema::from_iter(iter);
        *self = self.concat(&more);
    }
}

impl std::ops::Index<usize> for Schema {
    type Output = OutputColumn;
    fn index(&self, i: usize) -> &OutputColumn {
        let len = self.len();
        self.get(i).unwrap_or_else(|| panic!("column {i} of a schema of {len}"))
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Schema) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a Schema {
    type Item = &'a OutputColumn;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl IntoIterator for Schema {
    type Item = OutputColumn;
    type IntoIter = std::vec::IntoIter<OutputColumn>;
    fn into_iter(self) -> Self::IntoIter {
        self.to_vec().into_iter()
    }
}

/// The columns in order: the current leaf's, then the leaves still on the stack
/// (right sides pushed before left ones).
#[derive(Clone)]
pub struct Iter<'a> {
    leaf: std::slice::Iter<'a, OutputColumn>,
    stack: Vec<&'a Rope>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a OutputColumn;
    fn next(&mut self) -> Option<&'a OutputColumn> {
        loop {
            if let Some(c) = self.leaf.next() {
                return Some(c);
            }
            let mut node = self.stack.pop()?;
            loop {
                match node {
                    Rope::Leaf(v) => {
                        self.leaf = v.iter();
                        break;
                    }
                    Rope::Cat { left, right, .. } => {
                        self.stack.push(right);
                        node = left;
                    }
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.leaf.len() + self.stack.iter().map(|r| r.len()).sum::<usize>();
        (n, Some(n))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::DataType;

    fn col(i: usize) -> OutputColumn {
        OutputColumn { name: format!("c{i}"), ty: DataType::Integer }
    }

    fn check(s: &Schema, want: &[usize]) {
        assert_eq!(s.len(), want.len());
        let names: Vec<String> = s.iter().map(|c| c.name.clone()).collect();
        let expected: Vec<String> = want.iter().map(|i| format!("c{i}")).collect();
        assert_eq!(names, expected);
        for (k, i) in want.iter().enumerate() {
            assert_eq!(s[k].name, format!("c{i}"));
        }
        assert!(s.get(want.len()).is_none());
        fn balanced(r: &Rope) -> u32 {
            match r {
                Rope::Leaf(_) => 0,
                Rope::Cat { left, right, height, len } => {
                    let (hl, hr) = (balanced(left), balanced(right));
                    assert!(hl.abs_diff(hr) <= 1, "unbalanced: {hl} vs {hr}");
                    assert_eq!(*height, hl.max(hr) + 1);
                    assert_eq!(*len, left.len() + right.len());
                    *height
                }
            }
        }
        if let Some(r) = &s.0 {
            balanced(r);
        }
    }

    /// Left-deep, right-deep and bushy concatenations keep the order, stay
    /// balanced, and share their inputs (a chain of n holds O(n log n) nodes at
    /// most; here: the height stays logarithmic).
    #[test]
    fn concatenations_keep_order_and_balance() {
        let mut left = Schema::new();
        let mut right = Schema::new();
        for i in 0..2000 {
            left = left.concat(&Schema::from(vec![col(i)]));
            right = Schema::from(vec![col(1999 - i)]).concat(&right);
        }
        let want: Vec<usize> = (0..2000).collect();
        check(&left, &want);
        check(&right, &want);
        assert!(left.0.as_ref().unwrap().height() <= 16, "{}", left.0.as_ref().unwrap().height());
        // Bushy: pieces of different sizes joined in a random-looking order.
        let pieces: Vec<Schema> = (0..64).map(|p| (p * 10..p * 10 + (p % 7) + 1).map(col).collect()).collect();
        let mut all = Schema::new();
        let mut expect = Vec::new();
        for chunk in pieces.chunks(5) {
            let mut part = Schema::new();
            for p in chunk {
                part = part.concat(p);
                expect.extend(p.iter().map(|c| c.name[1..].parse::<usize>().unwrap()));
            }
            all = all.concat(&part);
        }
        check(&all, &expect);
        let both = left.concat(&all);
        let mut w = want.clone();
        w.extend(&expect);
        check(&both, &w);
        check(&both.slice(1990..2003), &w[1990..2003]);
        let mut m = both.clone();
        m.iter_mut().for_each(|c| c.name.push('x'));
        assert_eq!(m[5].name, "c5x");
        assert_eq!(both[5].name, "c5");
        m.push(col(7));
        assert_eq!(m.last().unwrap().name, "c7");
        assert_eq!(Schema::new().concat(&Schema::new()).len(), 0);
    }
}
