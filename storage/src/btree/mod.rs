pub mod key_encoding;
