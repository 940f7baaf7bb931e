//! B+trees: ordered maps from byte-string keys to small values, used for indexes.

pub mod cursor;
pub mod key_encoding;
pub mod node;
pub mod tree;

pub use cursor::{Cursor, Direction, Values};
pub use node::{MAX_VALUE_LEN, max_key_len};
pub use tree::{BTree, VerifyReport};
