//! Reading settings from string maps (the broker's `rsm.config.*` lines, a properties file, CLI flags),
//! with errors that name the key, the value and what was expected.
//!
//! Every component takes its settings through a [`ConfigReader`]: it reads each key it knows, and
//! [`ConfigReader::finish`] rejects the keys nobody read, so a typo is an error at start-up, not a silently
//! ignored line.
//!
//! Each setting is declared once, as a [`Setting`] (key, kind and range, default, meaning): the reader's
//! `get_*` methods take the declaration, and the documentation tables are generated from the crates'
//! catalogues of them ([`docs`]; `cargo test -p rsm-facade --test settings_docs` and
//! `cargo test -p rsm-cli --test settings_docs` check the committed pages, `RSM_BLESS=1` rewrites them).

pub mod docs;
mod setting;

pub use setting::{DefaultValue, Kind, Setting, Unit, amount};

use crate::error::{Error, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::RangeInclusive;
use std::str::FromStr;

/// The setting that names the store by URL (`rsm.config.store.url` on a broker, `--store` in the CLI).
/// Errors about the URL name this key.
pub const STORE_URL_KEY: &str = "store.url";

/// `store.memory.allowed`: read by the Kafka plugin (Java, `RustRemoteStorageManager.MEMORY_ALLOWED`), which
/// refuses a `memory:` store unless it is true; declared here for the documentation.
pub const STORE_MEMORY_ALLOWED: Setting = Setting::bool("store.memory.allowed", false).with_doc(
    "(Kafka plugin only; tests only) `true` lets `store.url` be `memory:`, which the plugin otherwise refuses: a \
     store in the broker's memory loses every tiered segment when the broker stops",
);

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

    /// The trimmed value of a typed setting: `None` when absent, an error naming the key when it is set to
    /// nothing (`chunk.size=`), which is a mistake rather than a request for the default.
    fn typed(&mut self, key: &str, expected: &str) -> Result<Option<&'a str>> {
        self.read.insert(key.to_string());
        match self.props.get(key).map(|v| v.trim()) {
            None => Ok(None),
            Some("") => {
                Err(Error::config(key, format!("is empty; expected {expected} (remove the line for the default)")))
            }
            Some(v) => Ok(Some(v)),
        }
    }

    /// The value of `key`, which must be present.
    pub fn required(&mut self, key: &str) -> Result<&'a str> {
        self.string(key).ok_or_else(|| Error::config(key, "is required but not set"))
    }

    /// A secret value of `key`, if set.
    pub fn secret(&mut self, key: &str) -> Option<Secret> {
        self.string(key).map(Secret::new)
    }

    /// `key` parsed as `T`, or `default` when absent; set to nothing is an error. The error names the key and
    /// the value, never a secret.
    pub fn parse<T: FromStr>(&mut self, key: &str, default: T, expected: &str) -> Result<T> {
        match self.typed(key, expected)? {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| Error::config(key, format!("`{v}` is not {expected}"))),
        }
    }

    /// An integer in `range`, or `default` when absent.
    pub fn int_in<T>(&mut self, key: &str, default: T, range: RangeInclusive<T>) -> Result<T>
    where
        T: FromStr + PartialOrd + fmt::Display + Copy,
    {
        let v = match self.typed(key, "an integer")? {
            None => default,
            Some(text) => text.parse().map_err(|_| {
                // An integer the type cannot hold (a negative count, one too big) is out of range, not "not an
                // integer".
                let why = match text.trim().parse::<i128>() {
                    Ok(_) => format!("{text} is out of range [{}, {}]", range.start(), range.end()),
                    Err(_) => format!("`{text}` is not an integer"),
                };
                Error::config(key, why)
            })?,
        };
        if !range.contains(&v) {
            return Err(Error::config(key, format!("{v} is out of range [{}, {}]", range.start(), range.end())));
        }
        Ok(v)
    }

    /// `true` or `false` (any case), or `default` when absent; set to nothing is an error.
    pub fn bool(&mut self, key: &str, default: bool) -> Result<bool> {
        match self.typed(key, "true or false")? {
            None => Ok(default),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
            Some(v) => Err(Error::config(key, format!("`{v}` is not true or false"))),
        }
    }

    /// The boolean `setting`, or its declared default when absent.
    pub fn get_bool(&mut self, setting: &Setting) -> Result<bool> {
        self.bool(setting.key, setting.default_bool())
    }

    /// The boolean `setting`, or `default` (worked out by the caller) when absent.
    pub fn get_bool_or(&mut self, setting: &Setting, default: bool) -> Result<bool> {
        self.bool(setting.key, default)
    }

    /// The integer `setting` in its declared range, or its declared default when absent.
    pub fn get_int<T>(&mut self, setting: &Setting) -> Result<T>
    where
        T: FromStr + PartialOrd + fmt::Display + Copy + TryFrom<i128>,
    {
        self.int_in(setting.key, setting.default_int(), setting.range())
    }

    /// The integer `setting` in its declared range, or `default` (worked out by the caller) when absent.
    pub fn get_int_or<T>(&mut self, setting: &Setting, default: T) -> Result<T>
    where
        T: FromStr + PartialOrd + fmt::Display + Copy + TryFrom<i128>,
    {
        self.int_in(setting.key, default, setting.range())
    }

    /// The integer at `key`, one of a family `setting` declares (`s3.connect.timeout` of
    /// `<p>.connect.timeout`), with the declared range and default.
    pub fn get_int_at<T>(&mut self, setting: &Setting, key: &str) -> Result<T>
    where
        T: FromStr + PartialOrd + fmt::Display + Copy + TryFrom<i128>,
    {
        self.int_in(key, setting.default_int(), setting.range())
    }

    /// The text `setting`, trimmed; empty counts as absent.
    pub fn get_string(&mut self, setting: &Setting) -> Option<&'a str> {
        self.string(setting.key)
    }

    /// The text `setting`, which must be present.
    pub fn get_required(&mut self, setting: &Setting) -> Result<&'a str> {
        self.required(setting.key)
    }

    /// The secret `setting`, if set.
    pub fn get_secret(&mut self, setting: &Setting) -> Option<Secret> {
        self.secret(setting.key)
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

/// Parses Java properties text as `java.util.Properties.load` does: `key=value`, `key: value` and
/// `key value` lines (the key ends at the first unescaped `=`, `:` or whitespace), `#` and `!` comment
/// lines, a line ending in an odd number of `\` continued on the next (its leading whitespace dropped),
/// and the escapes `\t`, `\n`, `\r`, `\f`, `\uXXXX` and `\` before any other character (that character).
/// Later lines win over earlier ones. Values are trimmed, as every setting is.
pub fn parse_properties(text: &str) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, first)) = lines.next() {
        let first = first.trim_start_matches([' ', '\t', '\x0c']);
        if first.is_empty() || first.starts_with('#') || first.starts_with('!') {
            continue;
        }
        // The logical line: physical lines joined while one ends in an odd number of backslashes.
        let mut logical = String::new();
        let mut line = first;
        loop {
            let trailing = line.len() - line.trim_end_matches('\\').len();
            if trailing % 2 == 0 {
                logical.push_str(line);
                break;
            }
            logical.push_str(&line[..line.len() - 1]);
            match lines.next() {
                Some((_, next)) => line = next.trim_start_matches([' ', '\t', '\x0c']),
                None => break,
            }
        }
        let (key, value) =
            split_property(&logical).map_err(|why| Error::invalid(format!("properties line {}: {why}", n + 1)))?;
        out.insert(key.trim().to_string(), value.trim().to_string());
    }
    Ok(out)
}

/// Splits one logical properties line into its key and value, both unescaped.
fn split_property(line: &str) -> std::result::Result<(String, String), String> {
    let mut chars = line.chars().peekable();
    let mut key = String::new();
    // The key, up to the first unescaped separator.
    let mut separated = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => key.push(unescape(&mut chars)?),
            '=' | ':' => {
                separated = true;
                break;
            }
            ' ' | '\t' | '\x0c' => break,
            c => key.push(c),
        }
    }
    // Whitespace, then at most one `=` or `:` when whitespace ended the key, then whitespace.
    while chars.next_if(|c| matches!(c, ' ' | '\t' | '\x0c')).is_some() {}
    if !separated && chars.next_if(|c| matches!(c, '=' | ':')).is_some() {
        while chars.next_if(|c| matches!(c, ' ' | '\t' | '\x0c')).is_some() {}
    }
    let mut value = String::new();
    while let Some(c) = chars.next() {
        match c {
            '\\' => value.push(unescape(&mut chars)?),
            c => value.push(c),
        }
    }
    Ok((key, value))
}

/// The character an escape stands for, after its backslash.
fn unescape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> std::result::Result<char, String> {
    Ok(match chars.next() {
        Some('t') => '\t',
        Some('n') => '\n',
        Some('r') => '\r',
        Some('f') => '\x0c',
        Some('u') => {
            let hex: String = chars.by_ref().take(4).collect();
            u32::from_str_radix(&hex, 16)
                .ok()
                .filter(|_| hex.len() == 4)
                .and_then(char::from_u32)
                .ok_or_else(|| format!("`\\u{hex}` is not a \\uXXXX escape"))?
        }
        Some(c) => c,
        // Not reached: a line's last odd backslash continues it and is dropped.
        None => return Err("ends in a lone `\\`".to_string()),
    })
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
        let p2 = props([("n", "-1"), ("big", "99999999999999999999")]);
        let mut r2 = ConfigReader::new(&p2);
        let e = r2.int_in("n", 1u32, 1..=100).unwrap_err();
        assert_eq!(e.to_string(), "invalid configuration `n`: -1 is out of range [1, 100]");
        let e = r2.int_in("big", 1u64, 1..=100).unwrap_err();
        assert_eq!(e.to_string(), "invalid configuration `big`: 99999999999999999999 is out of range [1, 100]");
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
    }

    /// The forms `java.util.Properties.load` accepts, each checked against what Java makes of it.
    #[test]
    fn properties_as_java_reads_them() {
        let text = "chunk.size 1048576\n\
                    fetch.concurrency:8\n\
                    \t  key.prefix   =  tiered/  \n\
                    spaced  :  v\n\
                    s3.region = eu-\\\n\
                    \t     west-1\n\
                    esc\\:aped\\ key=a\\=b\\tc\\u0041\n\
                    novalue\n\
                    ! comment\n\
                    # comment = not a key\n\
                    dup=1\n\
                    dup=2\n\
                    both = : x\n";
        let p = parse_properties(text).unwrap();
        let want = props([
            ("chunk.size", "1048576"),
            ("fetch.concurrency", "8"),
            ("key.prefix", "tiered/"),
            ("spaced", "v"),
            ("s3.region", "eu-west-1"),
            ("esc:aped key", "a=b\tcA"),
            ("novalue", ""),
            ("dup", "2"),
            ("both", ": x"),
        ]);
        assert_eq!(p, want);
        let e = parse_properties("a=1\nb=\\u12\n").unwrap_err();
        assert!(e.to_string().contains("properties line 2"), "{e}");
    }

    #[test]
    fn an_empty_typed_setting_is_an_error_naming_the_key() {
        let p = props([("chunk.size", " "), ("fs.fsync", ""), ("key.prefix", "")]);
        let mut r = ConfigReader::new(&p);
        let e = r.int_in("chunk.size", 4u32, 1..=10).unwrap_err();
        assert_eq!(e.config_key(), Some("chunk.size"));
        assert!(e.to_string().contains("`chunk.size`: is empty; expected an integer"), "{e}");
        let e = r.bool("fs.fsync", true).unwrap_err();
        assert!(e.to_string().contains("`fs.fsync`: is empty; expected true or false"), "{e}");
        assert_eq!(r.string("key.prefix"), None, "an empty text setting is still the default");
        assert_eq!(r.int_in("absent", 4u32, 1..=10).unwrap(), 4);
        r.finish().unwrap();
    }
}
