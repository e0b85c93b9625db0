//! What tiering costs: an optional price table (the `cost.*` settings, unset by default) and the estimate it
//! gives for the requests counted per topic ([`crate::Store::requests_by_topic`]) and the bytes stored.
//!
//! The prices are the provider's list prices the operator copies in, in the currency of that list (the
//! examples in the settings' documentation are US dollars). An estimate counts every request the counter
//! saw, failed ones included, at the price of its kind; a kind of request with no price is reported as
//! unpriced rather than guessed. Storage is priced per GB-month, a GB here being 2³⁰ bytes; the estimate
//! gives what the bytes stored now cost for a month. Transfer out of the provider's network, minimum
//! storage durations, tiers and discounts are not modelled.
//!
//! ```
//! use rsm_core::backend::{Op, RequestCounts};
//! use rsm_facade::cost::PriceTable;
//! let prices = PriceTable::default().with_request_price(Op::Put, 0.005).with_storage_price(0.023);
//! let counts = RequestCounts::new();
//! for _ in 0..3 {
//!     counts.start(Op::Put, 0);
//! }
//! let e = prices.estimate(&counts.snapshot(), Some(1 << 30));
//! assert!((e.requests - 0.000015).abs() < 1e-12);
//! assert_eq!(e.storage_per_month, Some(0.023));
//! assert!(e.unpriced.is_empty());
//! ```

use rsm_core::backend::{CountSnapshot, Op};
use rsm_core::config::{ConfigReader, Kind, Setting};
use rsm_core::{Error, Result};
use std::fmt;

const DECIMAL: &str = "a decimal ≥ 0";

/// The price of 1,000 uploads.
pub const PER_1000_PUT: Setting = Setting::of("cost.per.1000.put", Kind::String).with_checks(DECIMAL).with_doc(
    "price of 1,000 uploads (HTTP PUTs: whole objects, each multipart part or block, block lists), for cost \
     estimates only (`rsm tier`'s summary and metrics); unset: not priced. Example: 0.005, Amazon S3 Standard's \
     price for PUT, COPY, POST and LIST requests in us-east-1 as listed by the provider at the time of writing \
     (check current prices)",
);

/// The price of 1,000 HTTP POSTs.
pub const PER_1000_POST: Setting = Setting::of("cost.per.1000.post", Kind::String)
    .with_checks(DECIMAL)
    .with_described_default("as `cost.per.1000.put`")
    .with_doc(
        "price of 1,000 HTTP POSTs (multipart uploads started and completed, batch deletes); S3 prices them as \
         PUTs",
    );

/// The price of 1,000 reads.
pub const PER_1000_GET: Setting = Setting::of("cost.per.1000.get", Kind::String).with_checks(DECIMAL).with_doc(
    "price of 1,000 reads of objects (whole or ranged GETs). Example: 0.0004, S3 Standard's price for GET and \
     all other requests in us-east-1 as listed by the provider at the time of writing (check current prices)",
);

/// The price of 1,000 HTTP HEADs.
pub const PER_1000_HEAD: Setting = Setting::of("cost.per.1000.head", Kind::String)
    .with_checks(DECIMAL)
    .with_described_default("as `cost.per.1000.get`")
    .with_doc("price of 1,000 HTTP HEADs; S3 prices them as GETs (\"all other requests\")");

/// The price of 1,000 listings.
pub const PER_1000_LIST: Setting = Setting::of("cost.per.1000.list", Kind::String)
    .with_checks(DECIMAL)
    .with_doc("price of 1,000 listings (each page one request). Example: 0.005 (S3 Standard, us-east-1)");

/// The price of 1,000 deletes.
pub const PER_1000_DELETE: Setting = Setting::of("cost.per.1000.delete", Kind::String)
    .with_checks(DECIMAL)
    .with_doc("price of 1,000 deletes (HTTP DELETEs, multipart aborts included). Example: 0, S3 lists DELETE as free");

/// The price of storage.
pub const PER_GB_MONTH: Setting = Setting::of("cost.per.gb.month", Kind::String).with_checks(DECIMAL).with_doc(
    "price of storing one GB (2³⁰ bytes) for a month, for the estimate of what the bytes stored now cost a \
     month. Example: 0.023, S3 Standard's first 50 TB in us-east-1 as listed by the provider at the time of \
     writing (check current prices)",
);

/// Every price setting, in the order the documentation lists them.
pub const SETTINGS: [&Setting; 7] =
    [&PER_1000_PUT, &PER_1000_POST, &PER_1000_GET, &PER_1000_HEAD, &PER_1000_LIST, &PER_1000_DELETE, &PER_GB_MONTH];

/// A price as written: digits with an optional fraction (`0.005`, `12`, `.5`); no sign, no exponent.
fn parse_price(key: &str, text: &str) -> Result<f64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let ok = digits(whole) && digits(fraction) && !(whole.is_empty() && fraction.is_empty()) && text.len() <= 40;
    match ok.then(|| text.parse::<f64>()) {
        Some(Ok(v)) if v.is_finite() => Ok(v),
        _ => Err(Error::config(key, format!("`{text}` is not {DECIMAL}"))),
    }
}

fn op_index(op: Op) -> usize {
    Op::ALL.iter().position(|o| *o == op).unwrap_or(Op::ALL.len() - 1)
}

/// The provider's prices: per 1,000 requests of each kind and per GB-month stored; a price not set is not
/// guessed ([`CostEstimate::unpriced`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PriceTable {
    per_1000: [Option<f64>; Op::ALL.len()],
    per_gb_month: Option<f64>,
}

impl PriceTable {
    /// The table the `cost.*` settings give; `None` when none is set (no estimate is made). A POST without a
    /// price of its own costs what a PUT does, a HEAD what a GET does.
    pub fn read(r: &mut ConfigReader<'_>) -> Result<Option<PriceTable>> {
        let mut price = |s: &Setting| -> Result<Option<f64>> {
            let text = r.parse::<String>(s.key, String::new(), DECIMAL)?;
            if text.is_empty() { Ok(None) } else { parse_price(s.key, &text).map(Some) }
        };
        let (put, post, get, head) =
            (price(&PER_1000_PUT)?, price(&PER_1000_POST)?, price(&PER_1000_GET)?, price(&PER_1000_HEAD)?);
        let (list, delete, storage) = (price(&PER_1000_LIST)?, price(&PER_1000_DELETE)?, price(&PER_GB_MONTH)?);
        let mut t = PriceTable { per_gb_month: storage, ..PriceTable::default() };
        for (op, p) in [
            (Op::Put, put),
            (Op::Post, post.or(put)),
            (Op::Get, get),
            (Op::Head, head.or(get)),
            (Op::List, list),
            (Op::Delete, delete),
        ] {
            t.per_1000[op_index(op)] = p;
        }
        Ok((t != PriceTable::default()).then_some(t))
    }

    /// The same table with 1,000 requests of `op` priced at `price`.
    pub fn with_request_price(mut self, op: Op, price: f64) -> Self {
        self.per_1000[op_index(op)] = Some(price);
        self
    }

    /// The same table with storage priced at `price` per GB-month.
    pub fn with_storage_price(mut self, price: f64) -> Self {
        self.per_gb_month = Some(price);
        self
    }

    /// The price of 1,000 requests of `op`, if set.
    pub fn per_1000(&self, op: Op) -> Option<f64> {
        self.per_1000[op_index(op)]
    }

    /// The price of a GB (2³⁰ bytes) stored for a month, if set.
    pub fn per_gb_month(&self) -> Option<f64> {
        self.per_gb_month
    }

    /// What `requests` cost (every request counted, failed ones included) and, with `stored_bytes` known
    /// and storage priced, what those bytes cost a month.
    pub fn estimate(&self, requests: &CountSnapshot, stored_bytes: Option<u64>) -> CostEstimate {
        let mut out = CostEstimate { requests: 0.0, storage_per_month: None, unpriced: Vec::new() };
        for op in Op::ALL {
            let n = requests.get(op).requests;
            if n == 0 {
                continue;
            }
            match self.per_1000(op) {
                Some(p) => out.requests += n as f64 / 1000.0 * p,
                None => out.unpriced.push((op, n)),
            }
        }
        out.storage_per_month = match (stored_bytes, self.per_gb_month) {
            (Some(b), Some(p)) => Some(b as f64 / (1u64 << 30) as f64 * p),
            _ => None,
        };
        out
    }
}

/// What [`PriceTable::estimate`] gives, in the price table's currency.
#[derive(Debug, Clone, PartialEq)]
pub struct CostEstimate {
    /// What the priced requests cost.
    pub requests: f64,
    /// What the bytes stored cost a month, when they and the storage price are known.
    pub storage_per_month: Option<f64>,
    /// The kinds of request made that have no price, with how many.
    pub unpriced: Vec<(Op, u64)>,
}

/// An amount with six decimals (requests cost fractions of a cent).
pub fn money(v: f64) -> String {
    format!("{v:.6}")
}

impl fmt::Display for CostEstimate {
    /// `0.000015 for requests, 0.023000 a month for storage (not priced: DELETE 2)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} for requests", money(self.requests))?;
        if let Some(s) = self.storage_per_month {
            write!(f, ", {} a month for storage", money(s))?;
        }
        if !self.unpriced.is_empty() {
            let list: Vec<String> = self.unpriced.iter().map(|(op, n)| format!("{} {n}", op.name())).collect();
            write!(f, " (not priced: {})", list.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsm_core::backend::RequestCounts;
    use rsm_core::config::props;

    fn read(pairs: &[(&str, &str)]) -> Result<Option<PriceTable>> {
        let p = props(pairs.iter().copied());
        let mut r = ConfigReader::new(&p);
        let t = PriceTable::read(&mut r)?;
        r.finish()?;
        Ok(t)
    }

    #[test]
    fn no_price_set_is_no_table_and_posts_and_heads_default_to_puts_and_gets() {
        assert_eq!(read(&[]).unwrap(), None);
        let t = read(&[("cost.per.1000.put", "0.005"), ("cost.per.1000.get", " 0.0004 ")]).unwrap().unwrap();
        assert_eq!((t.per_1000(Op::Put), t.per_1000(Op::Post)), (Some(0.005), Some(0.005)));
        assert_eq!((t.per_1000(Op::Get), t.per_1000(Op::Head)), (Some(0.0004), Some(0.0004)));
        assert_eq!((t.per_1000(Op::List), t.per_1000(Op::Delete), t.per_gb_month()), (None, None, None));
        let t = read(&[("cost.per.1000.post", "1"), ("cost.per.1000.head", "2"), ("cost.per.gb.month", ".5")]);
        let t = t.unwrap().unwrap();
        assert_eq!((t.per_1000(Op::Put), t.per_1000(Op::Post), t.per_1000(Op::Head)), (None, Some(1.0), Some(2.0)));
        assert_eq!(t.per_gb_month(), Some(0.5));
        assert_eq!(
            read(&[("cost.per.1000.delete", "0")]).unwrap(),
            Some(PriceTable::default().with_request_price(Op::Delete, 0.0))
        );
    }

    #[test]
    fn prices_are_plain_decimals_at_least_zero() {
        for bad in ["-1", "1e3", "abc", ".", "0.5.1", "+1", "NaN", "inf", "1,5", " - "] {
            let e = read(&[("cost.per.1000.list", bad)]).unwrap_err();
            assert_eq!(e.config_key(), Some("cost.per.1000.list"), "{bad}: {e}");
            assert!(e.to_string().contains("a decimal ≥ 0"), "{bad}: {e}");
        }
        let e = read(&[("cost.per.gb.month", "")]).unwrap_err();
        assert_eq!(e.config_key(), Some("cost.per.gb.month"), "{e}");
        let e = read(&[("cost.per.1000.gets", "1")]).unwrap_err();
        assert_eq!(e.to_string(), "invalid configuration `cost.per.1000.gets`: unknown setting");
    }

    #[test]
    fn an_estimate_prices_each_kind_and_names_what_has_no_price() {
        let t = PriceTable::default()
            .with_request_price(Op::Put, 0.005)
            .with_request_price(Op::Get, 0.0004)
            .with_storage_price(0.023);
        let c = RequestCounts::new();
        for _ in 0..2000 {
            c.start(Op::Put, 10);
        }
        for _ in 0..500 {
            c.start(Op::Get, 0);
        }
        c.fail(Op::Get);
        c.start(Op::Delete, 0);
        c.start(Op::Delete, 0);
        let e = t.estimate(&c.snapshot(), Some(3 << 29));
        assert!((e.requests - (0.01 + 0.0002)).abs() < 1e-12, "{e:?}");
        assert!((e.storage_per_month.unwrap() - 0.0345).abs() < 1e-12, "{e:?}");
        assert_eq!(e.unpriced, [(Op::Delete, 2)]);
        assert_eq!(e.to_string(), "0.010200 for requests, 0.034500 a month for storage (not priced: DELETE 2)");
        let e = t.estimate(&CountSnapshot::default(), None);
        assert_eq!(e.to_string(), "0.000000 for requests");
    }
}
