//! Links librsm.so so that it exports only the `rsm_*` symbols of this crate.
//!
//! rustc already exports only `#[no_mangle]` items, but those of every dependency too (object_store pulls
//! in crc-fast, whose `ffi` feature is on by default and defines `crc_fast_*` C functions). Dependencies
//! reach the linker as archives (rlibs) and this crate's code as objects, so `--exclude-libs,ALL` keeps
//! every dependency's symbols local and leaves this crate's. A version script of our own would not do:
//! GNU ld refuses a second anonymous version script next to rustc's. `tests/c` checks the result with
//! `nm -D --defined-only`.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    // ELF linkers (GNU ld, gold, lld, mold) know --exclude-libs; macOS's and Windows' do not.
    if matches!(os.as_str(), "linux" | "android" | "freebsd" | "netbsd" | "openbsd" | "dragonfly") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,--exclude-libs,ALL");
        // A soname, so that a host linked against PREFIX/lib/librsm.so records `librsm.so`, not the path.
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librsm.so");
    }
}
