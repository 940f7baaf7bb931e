//! Randomized tests across the value types.
