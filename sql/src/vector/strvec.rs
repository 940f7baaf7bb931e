//! A vector of strings in one buffer: `offsets[i]..offsets[i+1]` of `buf` is string
//! `i`. Appending never allocates per string.

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StrVec {
    offsets: Vec<u32>,
    buf: String,
}

impl StrVec {
    pub fn new() -> StrVec {
        StrVec::with_capacity(0, 0)
    }

    pub fn with_capacity(strings: usize, bytes: usize) -> StrVec {
        let mut offsets = Vec::with_capacity(strings + 1);
        offsets.push(0);
        StrVec {
            offsets,
            buf: String::with_capacity(bytes),
        }
    }

    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn get(&self, i: usize) -> &str {
        &self.buf[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    #[inline]
    pub fn push(&mut self, s: &str) {
        self.buf.push_str(s);
        self.offsets.push(self.buf.len() as u32);
    }

    /// Appends a string built in place by `f` (no temporary allocation).
    #[inline]
    pub fn push_with(&mut self, f: impl FnOnce(&mut String)) {
        f(&mut self.buf);
        self.offsets.push(self.buf.len() as u32);
    }

    pub fn truncate(&mut self, len: usize) {
        if len < self.len() {
            self.offsets.truncate(len + 1);
            self.buf.truncate(self.offsets[len] as usize);
        }
    }

    pub fn extend(&mut self, other: &StrVec) {
        let base = self.buf.len() as u32;
        self.buf.push_str(&other.buf);
        self.offsets
            .extend(other.offsets[1..].iter().map(|&o| o + base));
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        (0..self.len()).map(|i| self.get(i))
    }

    pub fn heap_bytes(&self) -> usize {
        self.offsets.capacity() * 4 + self.buf.capacity()
    }
}

impl<'a> FromIterator<&'a str> for StrVec {
    fn from_iter<I: IntoIterator<Item = &'a str>>(iter: I) -> StrVec {
        let mut v = StrVec::new();
        for s in iter {
            v.push(s);
        }
        v
    }
}
