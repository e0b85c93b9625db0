//! Handles that Java holds as `long`s: ids into a registry, never raw pointers. The registry is the
//! facade's (`rsm_facade::handles`, shared with the C ABI); this wrapper gives it `jlong` ids and messages.
//!
//! An id is looked up on every call, so a stale, forged or twice-closed handle is an error (or, for close,
//! a no-op), never a use-after-free. Ids come from one counter shared by every registry and are never
//! reused, so a stream handle passed where a store handle belongs is refused too. A call holds an `Arc` of
//! the entry while it runs; a concurrent close removes the id at once and the entry is freed when the last
//! running call returns.

use rsm_core::{Error, Result};
use std::sync::Arc;

/// A registry of live objects of one kind, with `i64` handles.
pub struct Registry<T>(rsm_facade::handles::Registry<T>);

impl<T> Registry<T> {
    /// An empty registry; `what` names the kind in error messages.
    pub const fn new(what: &'static str) -> Self {
        Registry(rsm_facade::handles::Registry::new(what))
    }

    /// Registers `value` and returns its new handle (always positive).
    pub fn insert(&self, value: T) -> i64 {
        self.0.insert(value) as i64
    }

    /// The entry of a live handle.
    pub fn get(&self, id: i64) -> Result<Arc<T>> {
        u64::try_from(id).ok().and_then(|id| self.0.get(id)).ok_or_else(|| {
            Error::invalid(format!("{} handle {id} is not open (closed already, or never opened)", self.0.what()))
        })
    }

    /// Removes a handle; `false` when it was not live (closing twice is harmless).
    pub fn remove(&self, id: i64) -> bool {
        u64::try_from(id).is_ok_and(|id| self.0.remove(id))
    }

    /// How many handles are live.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no handle is live.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The stores Java holds, by handle.
pub(crate) static STORES: Registry<rsm_facade::Store> = Registry::new("store");
/// The fetch streams Java holds, by handle.
pub(crate) static STREAMS: Registry<std::sync::Mutex<rsm_facade::SegmentReader>> = Registry::new("stream");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_unique_checked_and_closing_twice_is_harmless() {
        let a: Registry<String> = Registry::new("thing");
        let b: Registry<u8> = Registry::new("other");
        let h = a.insert("x".into());
        let g = b.insert(1);
        assert!(h > 0 && g > 0 && h != g);
        assert_eq!(a.get(h).unwrap().as_str(), "x");
        assert!(a.get(g).is_err(), "a handle of another registry is refused");
        assert_eq!(a.len(), 1);
        let held = a.get(h).unwrap();
        assert!(a.remove(h));
        assert!(!a.remove(h));
        assert_eq!(a.len(), 0);
        let e = a.get(h).unwrap_err();
        assert!(e.to_string().contains(&format!("thing handle {h} is not open")), "{e}");
        assert_eq!(held.as_str(), "x", "a running call keeps its entry alive after close");
        assert!(a.get(0).is_err() && a.get(-5).is_err());
    }
}
