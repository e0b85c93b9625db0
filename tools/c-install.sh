#!/usr/bin/env bash
# Installs the C ABI into PREFIX, for C and C++ projects to find with pkg-config (`rsm`) or CMake
# (`find_package(rsm)`):
#   PREFIX/include/rsm.h
#   PREFIX/lib/librsm.so  PREFIX/lib/librsm.a
#   PREFIX/lib/pkgconfig/rsm.pc
#   PREFIX/lib/cmake/rsm/rsmConfig.cmake, rsmConfigVersion.cmake, rsmNativeLibs.cmake
# Every file finds the prefix from where it lies, so PREFIX can be moved or packaged as a whole.
#
# usage: tools/c-install.sh PREFIX [--release]    (builds librsm with cargo first: debug unless --release)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:?usage: tools/c-install.sh PREFIX [--release]}
profile=debug
cargo_flags=(--locked -p rsm-c --lib)
if [[ ${2:-} == --release ]]; then
  profile=release
  cargo_flags+=(--release)
fi
cargo build "${cargo_flags[@]}" ${RSM_CARGO_OFFLINE:+--offline}
target=${CARGO_TARGET_DIR:-target}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
# What librsm.a needs from the system (rustc --print native-static-libs for this target).
native_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"

mkdir -p "$prefix/include" "$prefix/lib/pkgconfig" "$prefix/lib/cmake/rsm"
install -m 644 include/rsm.h "$prefix/include/rsm.h"
install -m 755 "$target/$profile/librsm.so" "$prefix/lib/librsm.so"
install -m 644 "$target/$profile/librsm.a" "$prefix/lib/librsm.a"
sed -e "s/@VERSION@/$version/" -e "s/@NATIVE_LIBS@/$native_libs/" ffi/c/pkg/rsm.pc.in >"$prefix/lib/pkgconfig/rsm.pc"
install -m 644 ffi/c/pkg/rsmConfig.cmake "$prefix/lib/cmake/rsm/rsmConfig.cmake"
sed -e "s/@VERSION@/$version/" ffi/c/pkg/rsmConfigVersion.cmake.in >"$prefix/lib/cmake/rsm/rsmConfigVersion.cmake"
libs=${native_libs//-l/}
echo "set(RSM_NATIVE_LIBS ${libs})" >"$prefix/lib/cmake/rsm/rsmNativeLibs.cmake"
echo "installed librsm $version ($profile) into $prefix"
