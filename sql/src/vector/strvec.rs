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

    /// Appends byte strings that should each be UTF-8, checking them all at once:
    /// one validation over the appended bytes (fast on long runs, where a check per
    /// short string is mostly call overhead) plus a char-boundary test at every
    /// string's edges — valid pieces concatenate to valid UTF-8, and a valid whole
    /// whose every cut falls on a char boundary has valid pieces. On failure nothing
    /// is appended.
    pub fn extend_from_utf8<'b>(&mut self, pieces: impl Iterator<Item = &'b [u8]>) -> Result<(), std::str::Utf8Error> {
        let len0 = self.len();
        let start = self.buf.len();
        let mut bytes = std::mem::take(&mut self.buf).into_bytes();
        for p in pieces {
            bytes.extend_from_slice(p);
            self.offsets.push(bytes.len() as u32);
        }
        let ends = &self.offsets[len0..];
        let checked = std::str::from_utf8(&bytes[start..]).map(|_| ()).and_then(|()| {
            if ends.iter().all(|&o| is_char_boundary(&bytes, o as usize)) {
                return Ok(());
            }
            // Some piece is cut mid-char: its own check gives the error.
            ends.windows(2)
                .try_for_each(|w| std::str::from_utf8(&bytes[w[0] as usize..w[1] as usize]).map(|_| ()))
        });
        if checked.is_err() {
            bytes.truncate(start);
            self.offsets.truncate(len0 + 1);
        }
        // SAFETY: `bytes[..start]` was a `String`; `bytes[start..]` was validated
        // above (or truncated away).
        self.buf = unsafe { String::from_utf8_unchecked(bytes) };
        checked
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

    /// The buffers as they are: string `i` is `bytes[offsets[i]..offsets[i + 1]]`
    /// (`offsets` has `len() + 1` entries; `bytes` is UTF-8).
    pub fn raw_parts(&self) -> (&[u32], &[u8]) {
        (&self.offsets, self.buf.as_bytes())
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        (0..self.len()).map(|i| self.get(i))
    }

    pub fn heap_bytes(&self) -> usize {
        self.offsets.capacity() * 4 + self.buf.capacity()
    }
}

/// Whether byte `at` of valid UTF-8 `bytes` starts a char (or is the end).
#[inline]
fn is_char_boundary(bytes: &[u8], at: usize) -> bool {
    // Continuation bytes are 0b10xx_xxxx.
    bytes.get(at).is_none_or(|&b| (b as i8) >= -0x40)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(v: &[&[u8]]) -> Vec<Vec<u8>> {
        v.iter().map(|p| p.to_vec()).collect()
    }

    #[test]
    fn extend_from_utf8_keeps_each_piece_and_empty_ones() {
        let mut v: StrVec = ["x"].into_iter().collect();
        let p = pieces(&[b"a", b"", "é".as_bytes(), "日本".as_bytes(), b""]);
        v.extend_from_utf8(p.iter().map(|p| &p[..])).unwrap();
        assert_eq!(v.iter().collect::<Vec<_>>(), ["x", "a", "", "é", "日本", ""]);
    }

    #[test]
    fn extend_from_utf8_rejects_a_char_split_across_pieces_and_appends_nothing() {
        let mut v: StrVec = ["x"].into_iter().collect();
        // Together "é" (valid), apart two invalid strings.
        let split = pieces(&[b"a", &[0xC3], &[0xA9], b"b"]);
        assert!(v.extend_from_utf8(split.iter().map(|p| &p[..])).is_err());
        let bad = pieces(&[b"a", &[0xFF], b"b"]);
        assert!(v.extend_from_utf8(bad.iter().map(|p| &p[..])).is_err());
        assert_eq!(v.iter().collect::<Vec<_>>(), ["x"]);
        v.push("y");
        assert_eq!(v.iter().collect::<Vec<_>>(), ["x", "y"]);
    }
}
