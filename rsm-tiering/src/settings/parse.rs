//! Reading one typed value out of a [`ConfigReader`]: an integer in a range, a boolean (also one known
//! under two names), a cleanup policy (and the [`CleanupPolicy`] type every settings module shares).
//! Errors name the key, the value and the allowed range. Below every other settings module: it imports
//! none of them.

use rsm_core::config::{ConfigReader, Setting};
use rsm_core::error::{Error, Result};
use std::fmt;

/// Milliseconds in a minute, for the settings given in minutes.
pub(super) const MS_PER_MINUTE: i64 = 60_000;
/// Milliseconds in an hour, for the settings given in hours.
pub(super) const MS_PER_HOUR: i64 = 3_600_000;

/// What -1 means for a retention (appended to the allowed range in messages).
pub(super) const UNLIMITED_MEANING: &str = " (-1: unlimited)";
/// What -2 and -1 mean for a local retention time (appended to the allowed range in messages).
pub(super) const LOCAL_MS_MEANING: &str = " (-2: use retention.ms, -1: unlimited)";
/// What -2 and -1 mean for a local retention size.
pub(super) const LOCAL_BYTES_MEANING: &str = " (-2: use retention.bytes, -1: unlimited)";
/// What 0 and -1 mean for a delayed-upload lag.
pub(super) const LAG_MEANING: &str = " (0: no delay, -1: the effective local retention)";

/// `key` as an integer in `[lo, hi]`, or `None` when absent. `meaning` is appended to the allowed range
/// in messages (for special values such as -1).
pub(super) fn opt_int(r: &mut ConfigReader<'_>, key: &str, lo: i64, hi: i64, meaning: &str) -> Result<Option<i64>> {
    let Some(raw) = r.string(key) else {
        return Ok(None);
    };
    let v: i64 =
        raw.parse().map_err(|_| Error::config(key, format!("`{raw}` is not an integer in [{lo}, {hi}]{meaning}")))?;
    if v < lo || v > hi {
        return Err(Error::config(key, format!("{v} is out of range [{lo}, {hi}]{meaning}")));
    }
    Ok(Some(v))
}

/// The integer `setting` in its declared range, or `None` when absent; `meaning` as for [`opt_int`].
pub(super) fn opt_declared(r: &mut ConfigReader<'_>, setting: &Setting, meaning: &str) -> Result<Option<i64>> {
    let range = setting.range::<i64>();
    opt_int(r, setting.key, *range.start(), *range.end(), meaning)
}

/// `key` as `true` or `false` in any case, or `None` when absent.
pub(super) fn opt_bool(r: &mut ConfigReader<'_>, key: &str) -> Result<Option<bool>> {
    match r.string(key) {
        None => Ok(None),
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(v) if v.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(v) => Err(Error::config(key, format!("`{v}` is not true or false"))),
    }
}

/// A boolean known under the seed's name and Kafka's shipped name: either may be set; both set to
/// different values is an error naming both.
pub(super) fn aliased_bool(r: &mut ConfigReader<'_>, seed: &str, shipped: &str, default: bool) -> Result<bool> {
    let a = opt_bool(r, seed)?;
    let b = opt_bool(r, shipped)?;
    match (a, b) {
        (Some(x), Some(y)) if x != y => Err(Error::config(
            seed,
            format!("`{x}` contradicts `{shipped}` = `{y}` (the shipped name of the same setting); set one of them"),
        )),
        (Some(x), _) => Ok(x),
        (None, Some(y)) => Ok(y),
        (None, None) => Ok(default),
    }
}

/// `key` as a [`CleanupPolicy`], or `None` when absent.
pub(super) fn opt_cleanup(r: &mut ConfigReader<'_>, key: &str) -> Result<Option<CleanupPolicy>> {
    r.string(key).map(|raw| CleanupPolicy::parse(key, raw)).transpose()
}

/// A topic's `cleanup.policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanupPolicy {
    /// `delete` is in the list.
    pub delete: bool,
    /// `compact` is in the list.
    pub compact: bool,
}

impl CleanupPolicy {
    /// `delete`, Kafka's default.
    pub const DELETE: CleanupPolicy = CleanupPolicy { delete: true, compact: false };

    /// Parses a comma-separated list of `delete` and `compact`.
    pub fn parse(key: &str, raw: &str) -> Result<CleanupPolicy> {
        let mut p = CleanupPolicy { delete: false, compact: false };
        for item in raw.split(',').map(str::trim) {
            match item {
                "delete" => p.delete = true,
                "compact" => p.compact = true,
                _ => {
                    return Err(Error::config(
                        key,
                        format!("`{raw}` is not a cleanup policy; allowed: delete, compact, or delete,compact"),
                    ));
                }
            }
        }
        Ok(p)
    }
}

impl Default for CleanupPolicy {
    fn default() -> Self {
        CleanupPolicy::DELETE
    }
}

impl fmt::Display for CleanupPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.compact, self.delete) {
            (true, true) => f.write_str("compact,delete"),
            (true, false) => f.write_str("compact"),
            (false, _) => f.write_str("delete"),
        }
    }
}
