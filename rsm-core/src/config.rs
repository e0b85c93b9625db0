//! Reading settings from string maps (the broker's `rsm.config.*` lines, a properties file, CLI flags),
//! with errors that name the key, the value and what was expected.
//!
//! Every component takes its settings through a [`ConfigReader`]: it reads each key it knows, and
//! [`ConfigReader::finish`] rejects the keys nobody read, so a typo is an error at start-up, not a silently
//! ignored line.

use crate::error::{Error, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::RangeInclusive;
use std::str::FromStr;

/// The setting that names the store by URL (`rsm.config.store.url` on a broker, `--store` in the CLI).
/// Errors about the URL name this key.
pub const STORE_URL_KEY: &str = "store.url";

/// A secret setting (a key, a token, a SAS, a connection string). Its `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(****)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("****")
    }
}

/// Reads typed settings out of a string map and remembers which keys were read.
#[derive(Debug)]
pub struct ConfigReader<'a> {
    props: &'a BTreeMap<String, String>,
    read: BTreeSet<String>,
}

impl<'a> ConfigReader<'a> {
    /// A reader over `props`.
    pub fn new(props: &'a BTreeMap<String, String>) -> Self {
        ConfigReader { props, read: BTreeSet::new() }
    }

    /// The raw value of `key`, trimmed; empty values count as absent.
    pub fn string(&mut self, key: &str) -> Option<&'a str> {
        self.read.insert(key.to_string());
        self.props.get(key).map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    /// The value of `key`, which must be present.
    pub fn required(&mut self, key: &str) -> Result<&'a str> {
        self.string(key).ok_or_else(|| Error::config(key, "is required but not set"))
    }

    /// A secret value of `key`, if set.
    pub fn secret(&mut self, key: &str) -> Option<Secret> {
        self.string(key).map(Secret::new)
    }

    /// `key` parsed as `T`, or `default` when absent. The error names the key and the value, never a secret.
    pub fn parse<T: FromStr>(&mut self, key: &str, default: T, expected: &str) -> Result<T> {
        match self.string(key) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| Error::config(key, format!("`{v}` is not {expected}"))),
        }
    }

    /// An integer in `range`, or `default` when absent.
    pub fn int_in<T>(&mut self, key: &str, default: T, range: RangeInclusive<T>) -> Result<T>
    where
        T: FromStr + PartialOrd + fmt::Display + Copy,
    {
        let v = self.parse(key, default, "an integer")?;
        if !range.contains(&v) {
            return Err(Error::config(key, format!("{v} is out of range [{}, {}]", range.start(), range.end())));
        }
        Ok(v)
    }

    /// `true` or `false` (any case), or `default` when absent.
    pub fn bool(&mut self, key: &str, default: bool) -> Result<bool> {
        match self.string(key) {
            None => Ok(default),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
            Some(v) => Err(Error::config(key, format!("`{v}` is not true or false"))),
        }
    }

    /// Marks every key starting with `prefix` as read (a pass-through namespace), returning them with the
    /// prefix removed.
    pub fn with_prefix(&mut self, prefix: &str) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (k, v) in self.props.range(prefix.to_string()..) {
            let Some(rest) = k.strip_prefix(prefix) else {
                break;
            };
            self.read.insert(k.clone());
            out.insert(rest.to_string(), v.clone());
        }
        out
    }

    /// Marks `key` as known without reading it (a key another layer handles, such as `broker.id`).
    pub fn ignore(&mut self, key: &str) {
        self.read.insert(key.to_string());
    }

    /// Fails on the first key that was never read, naming it: unknown keys are typos.
    pub fn finish(self) -> Result<()> {
        match self.props.keys().find(|k| !self.read.contains(*k)) {
            None => Ok(()),
            Some(k) => Err(Error::config(k.clone(), "unknown setting")),
        }
    }
}

/// Builds a settings map from `key=value` pairs.
pub fn props<I, K, V>(pairs: I) -> BTreeMap<String, String>
where
    I: IntoIterator<Item = (K, V)>,
    K: Into<String>,
    V: Into<String>,
{
    pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect()
}

/// Parses Java properties text (`key=value` or `key: value` lines, `#`/`!` comments), enough for the
/// files operators keep next to a broker.
pub fn parse_properties(text: &str) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let split = line.find(['=', ':']);
        let Some(i) = split else {
            return Err(Error::invalid(format!("properties line {}: `{line}` has no `=`", n + 1)));
        };
        out.insert(line[..i].trim().to_string(), line[i + 1..].trim().to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_reads_name_the_key() {
        let p = props([("a", "12"), ("b", "x"), ("c", "TRUE"), ("d", "0"), ("x.y.z", "1"), ("x.y.w", "2")]);
        let mut r = ConfigReader::new(&p);
        assert_eq!(r.int_in("a", 1u32, 1..=100).unwrap(), 12);
        let e = r.int_in("b", 1u32, 1..=100).unwrap_err();
        assert_eq!(e.to_string(), "invalid configuration `b`: `x` is not an integer");
        assert!(r.bool("c", false).unwrap());
        let e = r.int_in("d", 1u32, 1..=100).unwrap_err();
        assert_eq!(e.to_string(), "invalid configuration `d`: 0 is out of range [1, 100]");
        assert_eq!(r.with_prefix("x.y.").len(), 2);
        r.finish().unwrap();
    }

    #[test]
    fn unknown_and_missing_keys_are_errors() {
        let p = props([("known", "1"), ("typo.key", "2")]);
        let mut r = ConfigReader::new(&p);
        let _ = r.string("known");
        let e = r.required("needed").unwrap_err();
        assert!(e.to_string().contains("`needed`"), "{e}");
        let e = r.finish().unwrap_err();
        assert_eq!(e.to_string(), "invalid configuration `typo.key`: unknown setting");
    }

    #[test]
    fn secrets_never_print() {
        let s = Secret::new("hunter2");
        assert!(!format!("{s:?} {s}").contains("hunter2"));
        assert_eq!(s.expose(), "hunter2");
    }

    #[test]
    fn properties_text() {
        let p = parse_properties("# c\n a = 1\nb:2\n\n!x\nc=d=e\n").unwrap();
        assert_eq!(p, props([("a", "1"), ("b", "2"), ("c", "d=e")]));
        assert!(parse_properties("novalue").unwrap_err().to_string().contains("line 1"));
    }
}
