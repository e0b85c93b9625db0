//! Store and stream handles: the pointers a C host holds are ids into a registry, never addresses of Rust
//! objects, so a closed, forged or mixed-up handle is an error and never a use after free.
//!
//! Ids come from one counter shared by every registry and are never reused, so a stream passed where a
//! store belongs is refused too. A call holds an `Arc` of its entry while it runs: a concurrent close
//! removes the id at once, and the object is freed when the last running call on it returns.
//!
//! (`ffi/jni/src/handles.rs` is the same idea with `jlong` ids; the two faces' handle types differ, and
//! neither holds storage logic.)

use rsm_core::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Ids start high and step by 16, so a small integer or a pointer-sized garbage value is very unlikely to
/// name a live handle by accident.
static NEXT_ID: AtomicUsize = AtomicUsize::new(0x5253_4d00);

/// A registry of live objects of one kind.
pub(crate) struct Registry<T> {
    what: &'static str,
    map: Mutex<Option<HashMap<usize, Arc<T>>>>,
}

impl<T> Registry<T> {
    /// An empty registry; `what` names the kind in error messages.
    pub(crate) const fn new(what: &'static str) -> Self {
        Registry { what, map: Mutex::new(None) }
    }

    fn lock(&self) -> MutexGuard<'_, Option<HashMap<usize, Arc<T>>>> {
        // Only the short, non-panicking operations below touch the map, so a poisoned lock still holds a
        // consistent map.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers `value`; returns its handle (never 0).
    pub(crate) fn insert(&self, value: T) -> usize {
        let id = NEXT_ID.fetch_add(16, Ordering::Relaxed);
        self.lock().get_or_insert_with(HashMap::new).insert(id, Arc::new(value));
        id
    }

    /// The entry of a live handle; `arg` names the argument in the error.
    pub(crate) fn get(&self, id: usize, arg: &str) -> Result<Arc<T>> {
        if id == 0 {
            return Err(Error::invalid(format!("`{arg}` is NULL")));
        }
        self.lock().as_ref().and_then(|m| m.get(&id).cloned()).ok_or_else(|| {
            Error::invalid(format!("`{arg}` is not an open {} handle (closed already, or never opened)", self.what))
        })
    }

    /// Removes a handle; `false` when it was not live.
    pub(crate) fn remove(&self, id: usize) -> bool {
        // Take the entry out under the lock, drop it after: dropping a stream may take a moment.
        let removed = self.lock().as_mut().and_then(|m| m.remove(&id));
        removed.is_some()
    }

    /// How many handles are live.
    pub(crate) fn len(&self) -> usize {
        self.lock().as_ref().map_or(0, HashMap::len)
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
        assert!(h != 0 && g != 0 && h != g);
        assert_eq!(a.get(h, "a").unwrap().as_str(), "x");
        let e = a.get(g, "a").unwrap_err();
        assert!(e.to_string().contains("`a` is not an open thing handle"), "{e}");
        let held = a.get(h, "a").unwrap();
        assert!(a.remove(h));
        assert!(!a.remove(h));
        assert_eq!(a.len(), 0);
        assert!(a.get(h, "a").is_err());
        assert_eq!(held.as_str(), "x", "a running call keeps its entry alive after close");
        assert!(a.get(0, "a").unwrap_err().to_string().contains("`a` is NULL"));
    }
}
