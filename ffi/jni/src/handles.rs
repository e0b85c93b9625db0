//! Handles that Java holds as `long`s: ids into a registry, never raw pointers.
//!
//! An id is looked up on every call, so a stale, forged or twice-closed handle is an error (or, for close,
//! a no-op), never a use-after-free. Ids come from one counter shared by every registry and are never
//! reused, so a stream handle passed where a store handle belongs is refused too. A call holds an `Arc` of
//! the entry while it runs; a concurrent close removes the id at once and the entry is freed when the last
//! running call returns.

use rsm_core::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

static NEXT_ID: AtomicI64 = AtomicI64::new(1);

/// A registry of live objects of one kind.
pub struct Registry<T> {
    what: &'static str,
    map: Mutex<Option<HashMap<i64, Arc<T>>>>,
}

impl<T> Registry<T> {
    /// An empty registry; `what` names the kind in error messages.
    pub const fn new(what: &'static str) -> Self {
        Registry { what, map: Mutex::new(None) }
    }

    fn lock(&self) -> MutexGuard<'_, Option<HashMap<i64, Arc<T>>>> {
        // The map is only touched by the short, non-panicking operations below, so a poisoned lock still
        // holds a consistent map.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers `value` and returns its new handle (always positive).
    pub fn insert(&self, value: T) -> i64 {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        self.lock().get_or_insert_with(HashMap::new).insert(id, Arc::new(value));
        id
    }

    /// The entry of a live handle.
    pub fn get(&self, id: i64) -> Result<Arc<T>> {
        self.lock().as_ref().and_then(|m| m.get(&id).cloned()).ok_or_else(|| {
            Error::invalid(format!("{} handle {id} is not open (closed already, or never opened)", self.what))
        })
    }

    /// Removes a handle; `false` when it was not live (closing twice is harmless).
    pub fn remove(&self, id: i64) -> bool {
        // Take the entry out under the lock, drop it after: dropping a stream may take a while.
        let removed = self.lock().as_mut().and_then(|m| m.remove(&id));
        removed.is_some()
    }

    /// How many handles are live.
    pub fn len(&self) -> usize {
        self.lock().as_ref().map_or(0, HashMap::len)
    }

    /// Whether no handle is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

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
