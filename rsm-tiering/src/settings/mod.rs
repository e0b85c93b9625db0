//! Tiering settings (SR-1 … SR-12 and delayed upload, KIP-1241): typed, parsed from string maps,
//! validated with errors that name the key, the value and the allowed range, and resolved per topic
//! (topic values override broker defaults) into a [`TopicPolicy`] the other rules take.
//!
//! Names follow the seeds; where Kafka as shipped uses another name it is accepted as an alias
//! (`remote.log.storage.system.enable`, the `rsm.config.` / `rlmm.config.` prefixes). `docs/settings.md`
//! lists every key.
//!
//! | file | concern |
//! |---|---|
//! | `parse` | one typed value out of a `ConfigReader`, with errors that name the key, value and range; [`CleanupPolicy`] |
//! | [`catalogue`] | every setting declared once ([`rsm_core::config::Setting`]): key, type, range, default, checks; the code and the docs read it |
//! | `topic` | [`TopicSettings`] and the broker's `log.*` [`TopicDefaults`] of them |
//! | `values` | topic over defaults, -2 and -1 resolved, cross-key checks (SR-10, SR-11, KIP-1241) into [`RetentionLimits`], [`RemoteRetention`], [`CopyLag`] |
//! | `broker` | [`BrokerSettings`] (SR-1 … SR-9) |
//! | `resolution` | [`TopicPolicy`]: topic over broker; [`validate_create`] and [`validate_alter`] (SR-12) |
//!
//! Each module imports only modules above it in this table (`parse` imports none of them), so the modules
//! form a tree.

mod broker;
pub mod catalogue;
mod parse;
mod resolution;
mod topic;
mod values;

pub use broker::BrokerSettings;
pub use parse::CleanupPolicy;
pub use resolution::{TopicPolicy, validate_alter, validate_create};
pub use topic::{TopicDefaults, TopicSettings};
pub use values::{CopyLag, Lag, Limit, RemoteRetention, RetentionLimits, SizeScope};

/// Builders and checks the settings tests share.
#[cfg(test)]
mod test_support {
    use super::{BrokerSettings, TopicSettings};
    use rsm_core::config::props;
    use rsm_core::error::Result;

    /// A broker with remote storage on over the `fs` backend, everything else default.
    pub(super) fn enabled_broker() -> BrokerSettings {
        BrokerSettings { remote_storage_enabled: true, storage_manager: Some("fs".into()), ..Default::default() }
    }

    /// A topic's settings from `(key, value)` pairs that must parse.
    pub(super) fn topic(pairs: &[(&str, &str)]) -> TopicSettings {
        TopicSettings::from_props(&props(pairs.iter().copied())).expect("topic settings parse")
    }

    /// A row of a table of rejected topic settings: the key the error names and a part of its message.
    pub(super) struct TopicError {
        pub(super) name: &'static str,
        pub(super) topic: &'static [(&'static str, &'static str)],
        pub(super) key: &'static str,
        pub(super) message: &'static str,
    }

    /// `got` is a configuration error naming `key` whose message contains `message`.
    pub(super) fn assert_config_error<T: std::fmt::Debug>(case: &str, got: Result<T>, key: &str, message: &str) {
        let e = got.expect_err(case);
        assert_eq!(e.config_key(), Some(key), "{case}: {e}");
        assert!(e.message().contains(message), "{case}: {e}");
    }
}
