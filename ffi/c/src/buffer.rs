//! The buffer: an [`rsm_buffer`] holds bytes the library hands to the caller (a copy's custom metadata),
//! read with `rsm_buffer_data` and `rsm_buffer_len` and freed with `rsm_buffer_free`.

/// Bytes the library returns (a copy's custom metadata). Owned by the caller, freed with `rsm_buffer_free`.
pub struct rsm_buffer {
    pub(crate) bytes: Vec<u8>,
}

impl rsm_buffer {
    /// A new buffer of `bytes`, as the pointer a caller receives.
    pub(crate) fn boxed(bytes: Vec<u8>) -> *mut Self {
        Box::into_raw(Box::new(rsm_buffer { bytes }))
    }
}

/// The bytes of a buffer (NULL for NULL; not NULL for an empty buffer), owned by it until
/// `rsm_buffer_free`.
///
/// # Safety
/// `buf` is NULL or a buffer the library returned and that is not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_buffer_data(buf: *const rsm_buffer) -> *const u8 {
    // SAFETY: the caller's contract.
    unsafe { buf.as_ref() }.map_or(std::ptr::null(), |b| b.bytes.as_ptr())
}

/// The length of a buffer (0 for NULL).
///
/// # Safety
/// `buf` is NULL or a buffer the library returned and that is not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_buffer_len(buf: *const rsm_buffer) -> usize {
    // SAFETY: the caller's contract.
    unsafe { buf.as_ref() }.map_or(0, |b| b.bytes.len())
}

/// Frees a buffer. NULL is a no-op.
///
/// # Safety
/// `buf` is NULL or a buffer the library returned that is not freed yet; it must not be used after.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rsm_buffer_free(buf: *mut rsm_buffer) {
    if !buf.is_null() {
        // SAFETY: the caller's contract: it came from `Box::into_raw` in `rsm_buffer::boxed`, freed once.
        drop(unsafe { Box::from_raw(buf) });
    }
}
