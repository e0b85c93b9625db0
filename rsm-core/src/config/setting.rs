//! The declaration of one setting: its key, type, range, default and meaning, written once and used both by
//! the code that reads it ([`ConfigReader::get_int`](super::ConfigReader::get_int) and the like take a
//! [`Setting`]) and by the generated documentation ([`super::docs`]).

use std::fmt;
use std::ops::RangeInclusive;

/// What values a setting takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `true` or `false`, in any case.
    Bool,
    /// A 16-bit integer in `[min, max]` (Kafka's "short").
    Short {
        /// The least value accepted.
        min: i128,
        /// The greatest value accepted.
        max: i128,
    },
    /// A 32-bit integer in `[min, max]` (Kafka's "int").
    Int {
        /// The least value accepted.
        min: i128,
        /// The greatest value accepted.
        max: i128,
    },
    /// A 64-bit integer in `[min, max]` (Kafka's "long").
    Long {
        /// The least value accepted.
        min: i128,
        /// The greatest value accepted.
        max: i128,
    },
    /// Free text.
    String,
    /// Comma-separated values.
    List,
    /// A file or directory.
    Path,
    /// A secret (a key, a token): read as [`Secret`](super::Secret), never shown.
    Secret,
    /// One of these words.
    Choice(&'static [&'static str]),
    /// A namespace whose keys are passed on, unread, to another component.
    PassThrough,
}

impl Kind {
    /// The type's name, as the documentation shows it.
    pub fn name(&self) -> String {
        match self {
            Kind::Bool => "bool".into(),
            Kind::Short { .. } => "short".into(),
            Kind::Int { .. } => "int".into(),
            Kind::Long { .. } => "long".into(),
            Kind::String => "string".into(),
            Kind::List => "list".into(),
            Kind::Path => "path".into(),
            Kind::Secret => "secret".into(),
            Kind::Choice(words) => words.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(" or "),
            Kind::PassThrough => "pass-through".into(),
        }
    }

    /// The range of an integer setting, `None` for other kinds.
    pub fn range(&self) -> Option<(i128, i128)> {
        match *self {
            Kind::Short { min, max } | Kind::Int { min, max } | Kind::Long { min, max } => Some((min, max)),
            _ => None,
        }
    }
}

/// What an integer setting counts, so the documentation can show `4 MiB` rather than `4194304`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A plain number.
    Count,
    /// Bytes.
    Bytes,
    /// Milliseconds.
    Millis,
}

/// A setting's value when it is not set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultValue {
    /// None: the setting is optional (or required, which its documentation says).
    None,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i128),
    /// A text value.
    Text(&'static str),
    /// A default the code works out (from other settings, or the broker's value), described in words.
    Described(&'static str),
}

impl fmt::Display for DefaultValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DefaultValue::None => f.write_str("(none)"),
            DefaultValue::Bool(b) => write!(f, "`{b}`"),
            DefaultValue::Int(v) => write!(f, "{v}"),
            DefaultValue::Text("") => f.write_str("(empty)"),
            DefaultValue::Text(t) => write!(f, "`{t}`"),
            DefaultValue::Described(d) => f.write_str(d),
        }
    }
}

/// One setting, declared once: the code reads it through this declaration and the documentation is
/// generated from it. Build one with the `const` constructors ([`Setting::int`], [`Setting::bool`], ...)
/// and the `with_*` methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    /// The key, as read from the settings map.
    pub key: &'static str,
    /// How the documentation names the key, when not just `key` (a family such as
    /// `encryption.key.<id>.file`, or aliases); Markdown.
    pub shown_as: Option<&'static str>,
    /// The values it takes.
    pub kind: Kind,
    /// The value when it is not set.
    pub default: DefaultValue,
    /// What an integer counts (documentation only).
    pub unit: Unit,
    /// What it does; Markdown, one line.
    pub doc: &'static str,
    /// A further note (for Kafka's keys: where the name and default come from); Markdown, may be empty.
    pub note: &'static str,
    /// Checks beyond the kind and range (e.g. "required with `x`"); Markdown, may be empty.
    pub checks: &'static str,
}

impl Setting {
    const fn new(key: &'static str, kind: Kind, default: DefaultValue) -> Self {
        Setting { key, shown_as: None, kind, default, unit: Unit::Count, doc: "", note: "", checks: "" }
    }

    /// A boolean setting with its default.
    pub const fn bool(key: &'static str, default: bool) -> Self {
        Setting::new(key, Kind::Bool, DefaultValue::Bool(default))
    }

    /// A 32-bit integer setting in `[min, max]`, with no default yet (see [`Setting::with_default`]).
    pub const fn int(key: &'static str, min: i128, max: i128) -> Self {
        Setting::new(key, Kind::Int { min, max }, DefaultValue::None)
    }

    /// A 64-bit integer setting in `[min, max]`.
    pub const fn long(key: &'static str, min: i128, max: i128) -> Self {
        Setting::new(key, Kind::Long { min, max }, DefaultValue::None)
    }

    /// A 16-bit integer setting in `[min, max]`.
    pub const fn short(key: &'static str, min: i128, max: i128) -> Self {
        Setting::new(key, Kind::Short { min, max }, DefaultValue::None)
    }

    /// A setting of another kind, with no default.
    pub const fn of(key: &'static str, kind: Kind) -> Self {
        Setting::new(key, kind, DefaultValue::None)
    }

    /// The same setting with this integer default.
    pub const fn with_default(self, default: i128) -> Self {
        Setting { default: DefaultValue::Int(default), ..self }
    }

    /// The same setting with this text default.
    pub const fn with_text_default(self, default: &'static str) -> Self {
        Setting { default: DefaultValue::Text(default), ..self }
    }

    /// The same setting with a default worked out by the code, described in words.
    pub const fn with_described_default(self, default: &'static str) -> Self {
        Setting { default: DefaultValue::Described(default), ..self }
    }

    /// The same setting counting `unit`.
    pub const fn with_unit(self, unit: Unit) -> Self {
        Setting { unit, ..self }
    }

    /// The same setting with its meaning.
    pub const fn with_doc(self, doc: &'static str) -> Self {
        Setting { doc, ..self }
    }

    /// The same setting with a note.
    pub const fn with_note(self, note: &'static str) -> Self {
        Setting { note, ..self }
    }

    /// The same setting with checks beyond its range.
    pub const fn with_checks(self, checks: &'static str) -> Self {
        Setting { checks, ..self }
    }

    /// The same setting shown in the documentation as `shown` (Markdown).
    pub const fn shown_as(self, shown: &'static str) -> Self {
        Setting { shown_as: Some(shown), ..self }
    }

    /// The range of an integer setting as `T`.
    ///
    /// # Panics
    /// When the setting is not an integer or `T` cannot hold its bounds: a mistake in the declaration, which
    /// the catalogue tests find.
    pub fn range<T: TryFrom<i128>>(&self) -> RangeInclusive<T> {
        let (min, max) = self.kind.range().unwrap_or_else(|| panic!("`{}` is not an integer setting", self.key));
        self.narrow(min)..=self.narrow(max)
    }

    /// The default of an integer setting as `T`.
    ///
    /// # Panics
    /// When the setting has no integer default or `T` cannot hold it (a mistake in the declaration).
    pub fn default_int<T: TryFrom<i128>>(&self) -> T {
        match self.default {
            DefaultValue::Int(v) => self.narrow(v),
            other => panic!("`{}` has no integer default ({other:?})", self.key),
        }
    }

    /// The default of a boolean setting.
    ///
    /// # Panics
    /// When the setting has no boolean default (a mistake in the declaration).
    pub fn default_bool(&self) -> bool {
        match self.default {
            DefaultValue::Bool(b) => b,
            other => panic!("`{}` has no boolean default ({other:?})", self.key),
        }
    }

    fn narrow<T: TryFrom<i128>>(&self, v: i128) -> T {
        T::try_from(v).unwrap_or_else(|_| panic!("`{}`: {v} does not fit the type it is read as", self.key))
    }

    /// The key as the documentation shows it (Markdown).
    pub fn shown_key(&self) -> String {
        self.shown_as.map_or_else(|| format!("`{}`", self.key), str::to_string)
    }

    /// The declared text default (`""` when it has none), for a text setting read with a fallback; `const`, so
    /// another declaration can be named by it (the namespace of a prefix setting's default).
    pub const fn default_text(&self) -> &'static str {
        match self.default {
            DefaultValue::Text(t) => t,
            _ => "",
        }
    }

    /// The default as the documentation shows it, in the setting's unit.
    pub fn shown_default(&self) -> String {
        match self.default {
            DefaultValue::Int(v) => amount(v, self.unit),
            DefaultValue::Bool(b) => b.to_string(),
            other => other.to_string(),
        }
    }

    /// The allowed values and further checks, as the documentation shows them ("" when anything goes).
    pub fn shown_validation(&self) -> String {
        let range = match self.kind {
            Kind::Bool => "`true`/`false`".to_string(),
            Kind::Short { min, max } | Kind::Int { min, max } | Kind::Long { min, max } => {
                format!("[{}, {}]", amount(min, self.unit), amount(max, self.unit))
            }
            _ => String::new(),
        };
        match (range.is_empty(), self.checks.is_empty()) {
            (_, true) => range,
            (true, false) => self.checks.to_string(),
            (false, false) if self.checks.starts_with('(') => format!("{range} {}", self.checks),
            (false, false) => format!("{range}; {}", self.checks),
        }
    }
}

/// `v` in `unit` as a reader would write it: `4 MiB (4194304)`, `1 h (3600000 ms)`, `2³¹−1`.
pub fn amount(v: i128, unit: Unit) -> String {
    let plain = match v {
        0x7fff_ffff => return "2³¹−1".into(),
        0x7fff_ffff_ffff_ffff => return "2⁶³−1".into(),
        0xffff_ffff_ffff_ffff => return "2⁶⁴−1".into(),
        v if v < 0 => format!("−{}", -v),
        v => v.to_string(),
    };
    let scaled = |steps: &[(i128, &str)]| {
        steps.iter().find(|(size, _)| v >= *size && v % size == 0).map(|(size, name)| format!("{} {name}", v / size))
    };
    let human = match unit {
        Unit::Count => None,
        Unit::Bytes => scaled(&[(1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]),
        Unit::Millis => scaled(&[(86_400_000, "d"), (3_600_000, "h"), (60_000, "min"), (1_000, "s")])
            .or_else(|| (v > 0).then(|| format!("{v} ms"))),
    };
    match human {
        Some(h) if unit == Unit::Millis && !h.ends_with("ms") => format!("{h} ({plain} ms)"),
        Some(h) if h.ends_with("ms") => h,
        Some(h) => format!("{h} ({plain})"),
        None => plain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_read_as_people_write_them() {
        assert_eq!(amount(4 << 20, Unit::Bytes), "4 MiB (4194304)");
        assert_eq!(amount(1000, Unit::Bytes), "1000");
        assert_eq!(amount(3_600_000, Unit::Millis), "1 h (3600000 ms)");
        assert_eq!(amount(100, Unit::Millis), "100 ms");
        assert_eq!(amount(0, Unit::Millis), "0");
        assert_eq!(amount(-2, Unit::Count), "−2");
        assert_eq!(amount(i32::MAX as i128, Unit::Count), "2³¹−1");
        assert_eq!(amount(i64::MAX as i128, Unit::Millis), "2⁶³−1");
    }

    #[test]
    fn a_declaration_gives_its_range_default_and_documentation() {
        const S: Setting = Setting::int("a.b", 1, 64).with_default(4).with_checks("(SR-0)").with_doc("things");
        assert_eq!(S.range::<u32>(), 1..=64);
        assert_eq!(S.default_int::<usize>(), 4);
        assert_eq!(
            (S.shown_key(), S.shown_default(), S.shown_validation()),
            ("`a.b`".into(), "4".into(), "[1, 64] (SR-0)".into())
        );
        const B: Setting = Setting::bool("c", true).with_checks("only with `a.b`");
        assert!(B.default_bool());
        assert_eq!(B.shown_validation(), "`true`/`false`; only with `a.b`");
        let t = Setting::of("d", Kind::Choice(&["x", "y"])).with_text_default("x");
        assert_eq!((t.kind.name(), t.shown_default()), ("`x` or `y`".to_string(), "`x`".to_string()));
        const P: Setting = Setting::of("f.prefix", Kind::String).with_text_default("f.");
        const NAMESPACE: Setting = Setting::of(P.default_text(), Kind::PassThrough);
        assert_eq!(NAMESPACE.key, "f.");
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn a_range_the_type_cannot_hold_is_a_declaration_mistake() {
        let _ = Setting::int("e", -1, 10).range::<u32>();
    }
}
