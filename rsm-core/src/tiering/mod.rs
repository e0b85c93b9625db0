//! The broker-side rules of the seeds as pure, deterministic logic (no I/O; time is passed in):
//! settings, copy eligibility with delayed upload, remote retention, offsets, followers, DeleteRecords
//! and ListOffsets.
