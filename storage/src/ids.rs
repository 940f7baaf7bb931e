//! Newtypes for every identifier the storage layer hands out, so that a page
//! number, a slot number and a log sequence number can never be confused.

use std::fmt;

/// Number of a page in the database file. Page 0 is the database header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PageId(pub u32);

impl PageId {
    /// The database header page.
    pub const HEADER: PageId = PageId(0);
    /// "No page": used in on-disk links (next pointers, free list) to end a chain.
    /// Page 0 is the header and is never linked to, so 0 is free to mean none.
    pub const NONE: PageId = PageId(0);

    pub fn is_none(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for PageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Index of a slot in a slotted page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SlotId(pub u16);

/// A tuple's stable address: the heap page and the slot in it. Indexes store these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TupleId {
    pub page: PageId,
    pub slot: SlotId,
}

impl TupleId {
    pub const ENCODED_BYTES: usize = 6;

    pub fn new(page: PageId, slot: u16) -> Self {
        TupleId {
            page,
            slot: SlotId(slot),
        }
    }

    /// Big-endian encoding: sorts like (page, slot), so it can end a B+tree key.
    pub fn to_bytes(self) -> [u8; 6] {
        let p = self.page.0.to_be_bytes();
        let s = self.slot.0.to_be_bytes();
        [p[0], p[1], p[2], p[3], s[0], s[1]]
    }

    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() < 6 {
            return None;
        }
        Some(TupleId {
            page: PageId(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
            slot: SlotId(u16::from_be_bytes([b[4], b[5]])),
        })
    }
}

impl fmt::Display for TupleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({},{})", self.page.0, self.slot.0)
    }
}

/// Log sequence number: the global, never-reused number of a WAL frame. Versions of a
/// page are named by the LSN of the frame that holds them; `Lsn(0)` is the version in
/// the main database file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lsn(pub u64);

impl Lsn {
    /// The version stored in the main database file (not in the WAL).
    pub const IN_DATABASE_FILE: Lsn = Lsn(0);
}

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Identifier of a write transaction, unique within one WAL generation and beyond.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TxnId(pub u64);
