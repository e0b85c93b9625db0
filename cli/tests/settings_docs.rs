//! `docs/settings.md`'s tables (tiering: broker and topic; the metadata manager's; the engine's) are
//! generated from the [`Setting`] declarations of rsm-tiering, rsm-metadata and rsm-engine (this crate sees
//! them all), and committed. This test regenerates them and fails when the committed ones differ;
//! `RSM_BLESS=1` writes the new tables instead. The README's store table is checked by
//! `facade/tests/settings_docs.rs`.

use rsm_core::config::docs::{Column, check_page, table};
use rsm_core::config::{DefaultValue, Setting};
use rsm_tiering::settings::catalogue::{BROKER_SETTINGS, TOPIC_SETTINGS};
use std::path::Path;

const BLESS: &str = "RSM_BLESS=1 cargo test -p rsm-cli --test settings_docs";

fn tables() -> Vec<(&'static str, String)> {
    use Column::*;
    vec![
        ("broker", table(BROKER_SETTINGS, &[Key, Type, Default, Validation, Note("seed / shipped")])),
        ("topic", table(TOPIC_SETTINGS, &[Key, Type, Default, Validation])),
        ("metadata", table(rsm_metadata::kafka::SETTINGS, &[Key, Type, Default, Validation, Note("note")])),
        ("engine", table(rsm_engine::config::SETTINGS, &[Key, Type, Default, Validation, Note("note")])),
    ]
}

#[test]
fn docs_settings_md_lists_every_setting_as_declared() {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/settings.md");
    if let Err(why) = check_page(&page, &tables(), BLESS) {
        panic!("{why}");
    }
}

/// Every declaration is consistent: its default is in its range, and no key is declared twice in a
/// catalogue.
#[test]
fn declarations_are_consistent() {
    let catalogues: [&[&Setting]; 4] =
        [BROKER_SETTINGS, TOPIC_SETTINGS, rsm_metadata::kafka::SETTINGS, rsm_engine::config::SETTINGS];
    for catalogue in catalogues {
        let mut keys = std::collections::BTreeSet::new();
        for s in catalogue {
            assert!(keys.insert(s.key), "`{}` is declared twice", s.key);
            if let (Some((min, max)), DefaultValue::Int(d)) = (s.kind.range(), s.default) {
                assert!((min..=max).contains(&d), "`{}`: default {d} outside [{min}, {max}]", s.key);
            }
        }
    }
}
