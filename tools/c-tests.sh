#!/usr/bin/env bash
# The C ABI's tests (run by tools/test-all after the Rust tests): builds librsm and the test fixture with
# cargo (debug, the profile the Rust tests already built the dependencies in), installs them into
# $target/c-tests/prefix with tools/c-install.sh, builds tests/c and tests/cpp with CMake (found through
# find_package(rsm)), and runs ctest three times:
#   plain (with the S3 round trip when the test command's S3 server is up); under valgrind memcheck (errors, and definite, indirect or possible leaks, fail a test; "still
#   reachable" blocks do not: they are the process-wide runtime and caches, alive until exit by design);
#   built with AddressSanitizer (the C and C++ code; the Rust library is not instrumented).
# It also compiles the C example of README.md exactly as written, with pkg-config, and runs it.
# Ends with `c: N passed, M failed`, which tools/test-all adds to its total; exits non-zero on a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
out=$target/c-tests
passed=0
failed=0
started=$(date +%s)

step() { printf '\n=== %s\n' "$*"; }
die() {
  echo "c-tests: $*" >&2
  echo "c: $passed passed, $((failed + 1)) failed"
  exit 1
}

step "build librsm and the fixture"
cargo build --locked -p rsm-c ${RSM_CARGO_OFFLINE:+--offline} || die "cargo build -p rsm-c failed"
RSM_CARGO_OFFLINE=${RSM_CARGO_OFFLINE:-} tools/c-install.sh "$out/prefix" >/dev/null || die "c-install failed"

# The README's C example, exactly as written: the first ```c block after the line that names this script.
awk '/tools\/c-tests.sh compiles/ {armed=1} armed && /^```c$/ {inside=1; next} inside && /^```$/ {exit}
     inside {print}' README.md >"$out/readme_example.c"
[[ -s $out/readme_example.c ]] || die "no C example found in README.md"

configure() { # build-dir extra-cmake-args...
  local dir=$1
  shift
  cmake -S tests/c -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_PREFIX_PATH="$out/prefix" \
    -DRSM_FIXTURE="$target/debug/rsm-c-fixture" -DRSM_README_EXAMPLE="$out/readme_example.c" "$@" \
    >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j 2 >"$dir.build.log" 2>&1 || { cat "$dir.build.log"; return 1; }
}

run_ctest() { # label build-dir [ctest args...]
  local label=$1 dir=$2 log
  shift 2
  step "ctest: $label"
  log=$(ctest --test-dir "$dir" --output-on-failure -j 2 "$@" 2>&1)
  echo "$log"
  local summary total bad
  summary=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' <<<"$log" | tail -1)
  if [[ -z $summary ]]; then
    failed=$((failed + 1))
    return
  fi
  total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$summary")
  bad=$(sed -E 's/.*passed, ([0-9]+) tests failed.*/\1/' <<<"$summary")
  passed=$((passed + total - bad))
  failed=$((failed + bad))
}

mkdir -p "$out"
# The S3 round trip runs against the server tools/test-all starts (its RSM_TEST_S3_* exports); locally
# without one it is left out and said so, in CI it must run.
s3=OFF
if [[ -n ${RSM_TEST_S3_ENDPOINT:-} ]]; then
  s3=ON
elif [[ ${CI:-} == true ]]; then
  die "no S3 server (RSM_TEST_S3_ENDPOINT is not set); in CI the S3 round trip must run"
else
  echo "c_s3_round_trip: left out (no RSM_TEST_S3_ENDPOINT: start tools/servers/moto.sh)"
fi
step "configure and build tests/c and tests/cpp"
configure "$out/build" -DRSM_S3=$s3 || die "building the plain tests failed"
run_ctest plain "$out/build"

if command -v valgrind >/dev/null; then
  export RSM_TEST_LAUNCHER="valgrind -q --error-exitcode=1 --leak-check=full --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible --suppressions=$PWD/tests/c/valgrind.supp"
  # The S3 round trip is left out here: it is valgrind-clean, but takes two minutes under it (hundreds of
  # HTTP requests through an uninstrumented debug build); the same C code runs against files here.
  run_ctest valgrind "$out/build" -E '^c_s3_round_trip$'
  unset RSM_TEST_LAUNCHER
else
  echo "valgrind is not installed" >&2
  failed=$((failed + 1))
fi

# The static C++ host was proven above; with ASan it links librsm.so (a second static link costs time).
step "configure and build with AddressSanitizer"
asan="-fsanitize=address -fno-omit-frame-pointer"
configure "$out/build-asan" -DRSM_S3=$s3 -DCMAKE_C_FLAGS="$asan" -DCMAKE_CXX_FLAGS="$asan" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address" -DRSM_CPP_STATIC=OFF || die "building the ASan tests failed"
ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 run_ctest asan "$out/build-asan"

step "README example, built with pkg-config"
example=$out/readme_example
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
if cc -Wall -Werror -o "$example" "$out/readme_example.c" \
  $(PKG_CONFIG_PATH="$out/prefix/lib/pkgconfig" pkg-config --cflags --libs rsm) &&
  result=$(LD_LIBRARY_PATH="$out/prefix/lib" "$example" "file://$out/build/work/store-readme") &&
  grep -Eq '^read [1-9][0-9]* bytes$' <<<"$result"; then
  echo "$result"
  passed=$((passed + 1))
else
  echo "the README example failed: ${result:-}" >&2
  failed=$((failed + 1))
fi

echo
echo "c tests took $(($(date +%s) - started)) s"
echo "c: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
