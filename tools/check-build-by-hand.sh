#!/usr/bin/env bash
# Runs the plugin's build-by-hand commands exactly as java-bindings/README.md writes them (the sh block after
# its "build-by-hand" marker), in a fresh copy of this tree (tracked and untracked files, ignored ones left
# out, so no target/ and no earlier jar), with CARGO_TARGET_DIR unset as on a fresh clone; then checks the jar
# they made carries the library cargo built, that no test ran, and that a missing library stops Maven with a
# message naming the path.
#
# So that cargo need not build every dependency again, the copy's target/ is a symbolic link to this tree's
# cargo target directory (CARGO_TARGET_DIR, default target/): only the workspace's own crates are compiled
# again (their path differs). RSM_MVN_OFFLINE=1 and RSM_MVN_REPO=/dir apply as in tools/java-tests.sh,
# through the copy's .mvn/maven.config, so the commands stay as written.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=$(realpath -m "${CARGO_TARGET_DIR:-$ROOT/target}")
README=java-bindings/README.md
JAR=java-bindings/target/rsm-kafka-plugin-0.1.0.jar

# The commands: the first ```sh block after the marker line.
commands=$(awk '/<!-- build-by-hand/ {found=1; next} found && /^```sh/ {inblock=1; next}
  inblock && /^```/ {exit} inblock {print}' "$README")
if [[ -z "$commands" ]]; then
  echo "no build-by-hand block in $README" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/rsm-build-by-hand.XXXXXX")
trap 'rm -rf "$work"' EXIT
clone=$work/clone
mkdir -p "$clone" "$TARGET"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  # A tracked file deleted in the working tree is not part of it.
  [[ -e "$f" ]] && printf '%s\0' "$f"
done | tar -C "$ROOT" --null -T - -cf - | tar -C "$clone" -xf -
ln -s "$TARGET" "$clone/target"
mkdir -p "$clone/.mvn"
: >"$clone/.mvn/maven.config"
if [[ "${RSM_MVN_OFFLINE:-}" == 1 ]]; then
  echo "-o" >>"$clone/.mvn/maven.config"
fi
if [[ -n "${RSM_MVN_REPO:-}" ]]; then
  echo "-Dmaven.repo.local=$RSM_MVN_REPO" >>"$clone/.mvn/maven.config"
fi

echo "running, in a copy of the tree ($clone), with CARGO_TARGET_DIR unset:"
echo "$commands" | sed 's/^/    /'
(cd "$clone" && env -u CARGO_TARGET_DIR bash -euo pipefail -c "$commands") >"$work/out.txt" 2>&1 || {
  tail -40 "$work/out.txt" >&2
  echo "the build-by-hand commands of $README failed (output above)" >&2
  exit 1
}

fail() {
  echo "build by hand: $*" >&2
  exit 1
}
[[ -f "$clone/$JAR" ]] || fail "no jar at $JAR, where $README says it is"
unzip -p "$clone/$JAR" native/linux-x86_64/librsm_jni.so >"$work/lib.so" \
  || fail "$JAR carries no native/linux-x86_64/librsm_jni.so"
cmp -s "$work/lib.so" "$TARGET/release/librsm_jni.so" || fail "the jar's library is not the one cargo built"
# grep without -q reads the whole listing: `grep -q` stops at the first match, unzip then dies of SIGPIPE,
# and pipefail turned that into "no plugin class" (CI saw it once).
unzip -l "$clone/$JAR" | grep 'io/rsm/kafka/RustRemoteStorageManager.class' >/dev/null || fail "the jar has no plugin class"
[[ ! -d "$clone/java-bindings/target/surefire-reports" ]] || fail "the commands ran the tests"

# A library that is not there: Maven stops before compiling, naming the path.
if (cd "$clone" && mvn -B -q -f java-bindings/pom.xml validate -Drsm.native.dir=/nonexistent/release) \
  >"$work/missing.txt" 2>&1; then
  fail "Maven accepted a missing native library"
fi
grep -q 'No native library at /nonexistent/release/librsm_jni.so' "$work/missing.txt" \
  || { cat "$work/missing.txt" >&2; fail "the missing library's message does not name the path"; }
echo "build by hand: ok ($(du -h "$clone/$JAR" | cut -f1) jar with the library cargo built; no test ran)"
