//! The reader pool (being written).
