//! The scheduler (being written).
