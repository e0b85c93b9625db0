//! The versions a host checks: the library's own, and the version of the C ABI, which tells whether the
//! library it loaded matches the header it was compiled against.

use std::ffi::c_char;

/// The version of the C ABI this header describes: it changes whenever a function, struct or code changes
/// incompatibly. Compare with `rsm_abi_version()` to check that the loaded library matches the header.
/// 2: positions are 64-bit (`int64_t`), for segments over 2 GiB (KIP-1333).
pub const RSM_ABI_VERSION: u32 = 2;

/// The library's version, as "MAJOR.MINOR.PATCH". The string is static: never freed, valid forever.
#[unsafe(no_mangle)]
pub extern "C" fn rsm_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The ABI version of the loaded library; equal to `RSM_ABI_VERSION` when header and library match.
#[unsafe(no_mangle)]
pub extern "C" fn rsm_abi_version() -> u32 {
    RSM_ABI_VERSION
}
