//! Handles: the pointers a C host holds for stores, streams and operations are ids into a registry, never
//! addresses of Rust objects, so a closed, forged or mixed-up handle is an error and never a use after free.
//!
//! Ids come from one counter shared by every registry and are never reused, so a stream passed where a
//! store belongs is refused too. A call holds an `Arc` of its entry while it runs: a concurrent close
//! removes the id at once, and the object is freed when the last running call on it returns.
//!
//! The registry itself is the facade's (`rsm_facade::handles`, shared with JNI); this wrapper gives it
//! the C face's id type and messages naming the argument. Each kind of handle keeps its registry with its
//! C object: stores in `store.rs`, streams in `stream.rs`, operations in `asynchronous.rs`. Here too is the
//! check that a blocking call is not made on the library's runtime.

use rsm_core::{Error, Result};
use std::sync::Arc;

/// Refuses a blocking call on one of the runtime's threads (from an asynchronous callback): blocking there
/// would stall the runtime that has to finish the call.
pub(crate) fn not_on_runtime(function: &str) -> Result<()> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(Error::invalid(format!(
            "{function} blocks and cannot be called on the library's runtime thread (from an asynchronous \
             callback); call it from a thread of the host's"
        )));
    }
    Ok(())
}

/// A handle as the pointer C holds.
pub(crate) fn as_handle<T>(id: usize) -> *mut T {
    // A handle is an id, never dereferenced: it only has to survive the round trip through C.
    std::ptr::without_provenance_mut(id)
}

/// A registry of live objects of one kind, with `usize` handles.
pub(crate) struct Registry<T>(rsm_facade::handles::Registry<T>);

impl<T> Registry<T> {
    /// An empty registry; `what` names the kind in error messages.
    pub(crate) const fn new(what: &'static str) -> Self {
        Registry(rsm_facade::handles::Registry::new(what))
    }

    /// Registers `value`; returns its handle (never 0).
    pub(crate) fn insert(&self, value: T) -> usize {
        self.0.insert(value) as usize
    }

    /// The entry of a live handle; `arg` names the argument in the error.
    pub(crate) fn get(&self, id: usize, arg: &str) -> Result<Arc<T>> {
        if id == 0 {
            return Err(Error::invalid(format!("`{arg}` is NULL")));
        }
        self.0.get(id as u64).ok_or_else(|| {
            Error::invalid(format!("`{arg}` is not an open {} handle (closed already, or never opened)", self.0.what()))
        })
    }

    /// Removes a handle; `false` when it was not live.
    pub(crate) fn remove(&self, id: usize) -> bool {
        self.0.remove(id as u64)
    }

    /// How many handles are live.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// The open stores.
pub(crate) static STORES: Registry<rsm_facade::Store> = Registry::new("store");

/// The open streams.
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
