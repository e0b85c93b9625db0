//! The filesystem store's settings, declared once: [`FsBackend`](crate::FsBackend) reads them through these
//! declarations and the documentation tables are generated from [`SETTINGS`].

use rsm_core::config::{Kind, Setting};

/// `fs.fsync`.
pub const FSYNC: Setting = Setting::bool("fs.fsync", true)
    .with_doc("(filesystem store) fsync every object and its directory before it becomes visible");
/// `fs.root.create`.
pub const ROOT_CREATE: Setting = Setting::bool("fs.root.create", false).with_doc(
    "(filesystem store) create the store's directory (and its parents) when it opens if it is missing; otherwise \
     a missing directory is an error naming it. The store never recreates its directory afterwards: if it \
     vanishes (deleted, share unmounted) every call fails naming it, and nothing is written in its place",
);
/// `fs.root`.
pub const ROOT: Setting = Setting::of("fs.root", Kind::Path)
    .with_doc("(filesystem store) the root, required by `FsBackend::from_config` (a `file://` URL names it otherwise)");

/// The settings the filesystem store reads, in the order the documentation lists them.
pub const SETTINGS: &[&Setting] = &[&FSYNC, &ROOT_CREATE, &ROOT];
