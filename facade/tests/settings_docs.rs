//! The README's table of store settings, and the settings tables of every store's crate documentation
//! (filesystem, HDFS, S3, Azure, GCS), are generated from the [`Setting`] declarations of rsm-core and the
//! stores (this crate sees every store), and committed. This test regenerates it and fails when the committed
//! one differs; `RSM_BLESS=1` writes the new table instead. The settings of `docs/settings.md` (tiering,
//! engine, metadata) are checked by `cli/tests/settings_docs.rs`.

use rsm_core::backend::layers::{BreakerConfig, ParallelReads, RetryConfig, UploadRateLimit};
use rsm_core::config::docs::{Column, check_page, table};
use rsm_core::config::{STORE_MEMORY_ALLOWED, Setting};
use std::path::Path;

const BLESS: &str = "RSM_BLESS=1 cargo test -p rsm-facade --test settings_docs";

/// Every store setting the README lists, in its order: the storage manager's, then each store's.
fn store_settings() -> Vec<&'static Setting> {
    let mut all: Vec<&'static Setting> = rsm_core::storage::settings::SETTINGS.to_vec();
    all.extend([&rsm_backend_fs::config::FSYNC, &rsm_backend_fs::config::ROOT_CREATE]);
    all.extend(rsm_backend_s3::ClientSettings::SETTINGS);
    all.push(&rsm_backend_hdfs::config::CONNECT_TIMEOUT);
    all.extend(RetryConfig::SETTINGS);
    all.extend(ParallelReads::SETTINGS);
    all.extend(UploadRateLimit::SETTINGS);
    all.extend(BreakerConfig::SETTINGS);
    all.extend(rsm_facade::cost::SETTINGS);
    all.push(&STORE_MEMORY_ALLOWED);
    all
}

#[test]
fn the_readme_lists_every_store_setting_as_declared() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let columns = [Column::Key, Column::Default, Column::Validation, Column::Meaning];
    let tables = [("store", table(&store_settings(), &columns))];
    if let Err(why) = check_page(&readme, &tables, BLESS) {
        panic!("{why}");
    }
}

/// A table as lines of a crate's `//!` documentation, ending where the end marker's line continues.
fn in_crate_docs(table: &str) -> String {
    table.lines().map(|l| format!("//! {l}\n")).collect::<String>() + "//! "
}

#[test]
fn the_stores_crate_documentation_lists_their_settings_as_declared() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let columns = [Column::Key, Column::Default, Column::Meaning];
    let cloud = |own: &[&'static Setting]| -> Vec<&'static Setting> {
        own.iter().copied().chain(rsm_backend_s3::ClientSettings::SETTINGS).collect()
    };
    let pages: [(&str, &str, Vec<&Setting>); 5] = [
        ("backends/fs/src/lib.rs", "fs", rsm_backend_fs::config::SETTINGS.to_vec()),
        ("backends/hdfs/src/lib.rs", "hdfs", rsm_backend_hdfs::config::SETTINGS.to_vec()),
        ("backends/s3/src/lib.rs", "s3", cloud(rsm_backend_s3::config::SETTINGS)),
        ("backends/azure/src/lib.rs", "azure", cloud(rsm_backend_azure::config::SETTINGS)),
        ("backends/gcs/src/lib.rs", "gcs", cloud(rsm_backend_gcs::config::SETTINGS)),
    ];
    for (page, name, settings) in pages {
        let tables = [(name, in_crate_docs(&table(&settings, &columns)))];
        if let Err(why) = check_page(&root.join(page), &tables, BLESS) {
            panic!("{why}");
        }
    }
}

/// Every declaration is consistent: its default is in its range, and no key is declared twice.
#[test]
fn declarations_are_consistent() {
    let mut all = store_settings();
    all.extend(rsm_backend_fs::config::SETTINGS.iter().filter(|s| s.key == "fs.root"));
    all.extend(rsm_backend_hdfs::config::SETTINGS.iter().filter(|s| s.key != "hdfs.connect.timeout"));
    all.extend(rsm_backend_s3::config::SETTINGS);
    all.extend(rsm_backend_azure::config::SETTINGS);
    all.extend(rsm_backend_gcs::config::SETTINGS);
    let mut keys = std::collections::BTreeSet::new();
    for s in &all {
        assert!(keys.insert(s.key), "`{}` is declared twice", s.key);
        assert!(!s.doc.is_empty(), "`{}` has no meaning", s.key);
        if let (Some((min, max)), rsm_core::config::DefaultValue::Int(d)) = (s.kind.range(), s.default) {
            assert!((min..=max).contains(&d), "`{}`: default {d} outside [{min}, {max}]", s.key);
        }
    }
}
