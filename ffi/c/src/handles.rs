//! Store and stream handles: the pointers a C host holds are ids into a registry, never addresses of Rust
//! objects, so a closed, forged or mixed-up handle is an error and never a use after free.
//!
//! Ids come from one counter shared by every registry and are never reused, so a stream passed where a
//! store belongs is refused too. A call holds an `Arc` of its entry while it runs: a concurrent close
//! removes the id at once, and the object is freed when the last running call on it returns.
//!
//! The registry itself is the facade's (`rsm_facade::handles`, shared with JNI); this wrapper gives it
//! the C face's id type and messages naming the argument. The process's two registries, of stores and of
//! streams, are here with the lookups every entry point makes.

use rsm_core::{Error, ErrorKind, Result};
use rsm_facade::{SegmentReader, Store};
use std::sync::{Arc, Mutex};

/// An open store: a handle from `rsm_store_open`, closed with `rsm_store_close`. Opaque.
pub struct rsm_store {
    _private: [u8; 0],
}

/// An open read of a segment range or an index: a handle from `rsm_fetch` or `rsm_fetch_index`, read with
/// `rsm_stream_read`, closed with `rsm_stream_close`. Opaque.
pub struct rsm_stream {
    _private: [u8; 0],
}

pub(crate) static STORES: Registry<Store> = Registry::new("store");
pub(crate) static STREAMS: Registry<Mutex<SegmentReader>> = Registry::new("stream");

/// The store of a handle, for the asynchronous form.
pub(crate) fn store_of(s: *const rsm_store) -> Result<Arc<Store>> {
    STORES.get(s as usize, "store")
}

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

/// The store of a handle, for a blocking call.
pub(crate) fn blocking_store_of(s: *const rsm_store, function: &str) -> Result<Arc<Store>> {
    not_on_runtime(function)?;
    store_of(s)
}

/// A handle as the pointer C holds.
pub(crate) fn as_handle<T>(id: usize) -> *mut T {
    // A handle is an id, never dereferenced: it only has to survive the round trip through C.
    std::ptr::without_provenance_mut(id)
}

/// Runs `f` on the reader of a stream handle, refusing one a panic left unusable.
pub(crate) fn with_stream<T>(s: *const rsm_stream, f: impl FnOnce(&mut SegmentReader) -> Result<T>) -> Result<T> {
    let stream = STREAMS.get(s as usize, "stream")?;
    let mut reader = stream.lock().map_err(|_| {
        Error::new(ErrorKind::Storage, "`stream` is unusable: a panic interrupted an earlier call on it; close it")
    })?;
    f(&mut reader)
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
