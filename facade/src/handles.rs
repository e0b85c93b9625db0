//! Handles a host holds (a C pointer, a Java `long`): ids into a registry, never addresses of Rust
//! objects, so a stale, forged, closed or mixed-up handle is refused and never a use after free. The C ABI
//! and JNI faces wrap a [`Registry`] with their own id types and error messages.
//!
//! Ids come from one counter shared by every registry and are never reused, so a handle of one kind passed
//! where another belongs is refused too. They start high and step by 16, so a small integer or a
//! pointer-sized garbage value is very unlikely to name a live handle by accident; they stay positive as
//! an `i64`. A call holds an `Arc` of its entry while it runs: a concurrent close removes the id at once,
//! and the object is freed when the last running call on it returns.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

static NEXT_ID: AtomicU64 = AtomicU64::new(0x5253_4d00);

/// A registry of live objects of one kind.
pub struct Registry<T> {
    what: &'static str,
    map: Mutex<Option<HashMap<u64, Arc<T>>>>,
}

impl<T> Registry<T> {
    /// An empty registry; `what` names the kind (`store`, `stream`) for the faces' messages.
    pub const fn new(what: &'static str) -> Self {
        Registry { what, map: Mutex::new(None) }
    }

    /// The kind of object, as given to [`Registry::new`].
    pub fn what(&self) -> &'static str {
        self.what
    }

    fn lock(&self) -> MutexGuard<'_, Option<HashMap<u64, Arc<T>>>> {
        // Only the short, non-panicking operations below touch the map, so a poisoned lock still holds a
        // consistent map.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers `value`; returns its handle (never 0).
    pub fn insert(&self, value: T) -> u64 {
        let id = NEXT_ID.fetch_add(16, Ordering::Relaxed);
        self.lock().get_or_insert_with(HashMap::new).insert(id, Arc::new(value));
        id
    }

    /// The entry of a live handle.
    pub fn get(&self, id: u64) -> Option<Arc<T>> {
        self.lock().as_ref().and_then(|m| m.get(&id).cloned())
    }

    /// Removes a handle; `false` when it was not live (closing twice is harmless).
    pub fn remove(&self, id: u64) -> bool {
        // Take the entry out under the lock, drop it after: dropping a stream may take a moment.
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
    fn handles_are_unique_and_closing_twice_is_harmless() {
        let a: Registry<String> = Registry::new("thing");
        let b: Registry<u8> = Registry::new("other");
        let h = a.insert("x".into());
        let g = b.insert(1);
        assert!(h != 0 && g != 0 && h != g && h < i64::MAX as u64);
        assert_eq!(a.get(h).unwrap().as_str(), "x");
        assert!(a.get(g).is_none(), "a handle of another registry is refused");
        let held = a.get(h).unwrap();
        assert!(a.remove(h));
        assert!(!a.remove(h));
        assert!(a.is_empty());
        assert!(a.get(h).is_none());
        assert_eq!(held.as_str(), "x", "a running call keeps its entry alive after close");
    }
}
