//! The commands of `rsm`, one module each, with its arguments (a clap `Args` struct) and its `run` (the
//! engine's commands share [`engine`], `ls` and `verify` share [`listing`]); `main` lists the commands,
//! parses the arguments and calls each command's `run`.

pub mod audit;
pub mod copy;
pub mod delete;
pub mod demo;
pub mod engine;
pub mod expire;
pub mod failed_deletions;
pub mod fetch;
pub mod listing;
pub mod ls;
pub mod metadata;
pub mod migrate;
pub mod offsets;
pub mod read;
pub mod rebuild_metadata;
pub mod rewrap;
pub mod sweep;
pub mod tier;
pub mod verify;
