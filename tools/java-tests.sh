#!/usr/bin/env bash
# The Kafka plugin's tests, from a fresh clone: builds the JNI library (rsm-jni), packages the plugin jar with
# it, and runs
#   - the JUnit tests against the filesystem store, compiled and run on the baseline Kafka API (3.9.2), then
#     again compiled and run on the newest (4.4.0);
#   - end to end with real KRaft brokers from Maven Central (4.4.0, the first 4.x line 4.0.0, and 3.9.2), our
#     jar on their remote.log.storage.manager.class.path, on the filesystem store; then 4.4.0 again on S3
#     (moto: the one tools/test-all started, from the RSM_TEST_S3_* variables, or one started here), the jar
#     on the broker's class path as the KIP-877 class, with the plugin's compression and encryption on;
#   - a switch from Aiven's plugin on the newest broker (AivenSwitchIT): the topic's remote segments rewritten
#     in the store as Aiven's (the cargo example aiven_fixture), every old offset read, new copies ours,
#     retention of both, `rsm audit` clean;
#   - the 1 MiB remote-fetch latency of our plugin against Kafka's own LocalTieredStorage in one JVM;
#   - after the others, the newest broker on S3 (moto) through the Rust tests' fault-injecting proxy (the cargo
#     example fault_proxy), in phases of a black hole, 503 Slow Down and cut answers (BrokerStoreFaultsIT);
#   - java-bindings/README.md's build-by-hand commands, as written, in a fresh copy of the tree
#     (tools/check-build-by-hand.sh).
# Needs cargo, a JDK 17+ and Maven; the first run downloads what it needs into ~/.m2 (a few hundred MB), later
# runs work from there (RSM_MVN_OFFLINE=1 forbids the network; RSM_MVN_REPO=/dir uses another local repository).
# Results: java-bindings/target/e2e/*/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export CARGO_TERM_COLOR=never
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
NEWEST=${RSM_KAFKA_NEWEST:-4.4.0}
# The baseline: 3.9, the line where tiered storage left early access (3.6-3.8 are served too, early access).
OLDEST=${RSM_KAFKA_OLDEST:-3.9.2}
# The first 4.x line; also where the kafka-storage test jar (Kafka's LocalTieredStorage) for the latency
# comparison comes from.
FIRST4=${RSM_KAFKA_FIRST4:-4.0.0}
OUT=$ROOT/java-bindings/target
MVN=(mvn -B --no-transfer-progress)
if [[ "${RSM_MVN_OFFLINE:-}" == 1 ]]; then
  MVN+=(-o)
fi
if [[ -n "${RSM_MVN_REPO:-}" ]]; then
  # Another local repository (a cold-cache run without touching ~/.m2).
  MVN+=(-Dmaven.repo.local="$RSM_MVN_REPO")
fi

step() { printf '\n=== %s\n' "$*"; }
start=$(date +%s)

step "toolchain"
java -version 2>&1 | sed -n 1p
"${MVN[@]}" -version 2>&1 | sed -n 1p
cargo --version

step "S3 server for the broker run on S3"
if [[ -z "${RSM_TEST_S3_ENDPOINT:-}" ]]; then
  eval "$(tools/servers/moto.sh start)"
  trap 'tools/servers/moto.sh stop || true' EXIT
fi
echo "S3 on $RSM_TEST_S3_ENDPOINT, bucket $RSM_TEST_S3_BUCKET"
s3_props=(-Drsm.s3.endpoint="$RSM_TEST_S3_ENDPOINT" -Drsm.s3.bucket="$RSM_TEST_S3_BUCKET"
  -Drsm.s3.region="$RSM_TEST_S3_REGION" -Drsm.s3.access.key="$RSM_TEST_S3_ACCESS_KEY"
  -Drsm.s3.secret.key="$RSM_TEST_S3_SECRET_KEY")

step "native library (cargo build --release -p rsm-jni)"
t=$(date +%s)
cargo build --locked --release -p rsm-jni
lib=$CARGO_TARGET_DIR/release/librsm_jni.so
# The jar carries a copy without debug info (the symbols stay, for stack traces), a few MB instead of ~100.
dist=$CARGO_TARGET_DIR/jni-dist
mkdir -p "$dist"
if command -v objcopy >/dev/null; then
  objcopy --strip-debug "$lib" "$dist/librsm_jni.so"
else
  cp "$lib" "$dist/librsm_jni.so"
fi
echo "native library built in $(( $(date +%s) - t )) s: $(du -h "$dist/librsm_jni.so" | cut -f1)"

step "the rsm binary and the Aiven fixture maker, for the metadata interop and switch tests (cargo build)"
# The debug build: tools/test-all has built it already for the CLI's tests, and the test reads little.
t=$(date +%s)
cargo build --locked -p rsm-cli
cargo build --locked -p rsm-facade --example aiven_fixture
echo "rsm built in $(( $(date +%s) - t )) s"

step "the README's build-by-hand commands, as written, in a fresh copy of the tree"
t=$(date +%s)
tools/check-build-by-hand.sh
echo "build by hand checked in $(( $(date +%s) - t )) s"

step "broker class paths (Kafka $NEWEST, $FIRST4 and $OLDEST from Maven Central)"
mkdir -p "$OUT"
for v in "$NEWEST" "$FIRST4" "$OLDEST"; do
  "${MVN[@]}" -q -f java-bindings/broker-runtime/pom.xml -Dkafka.version="$v" dependency:build-classpath \
    -Dmdep.outputFile="$OUT/broker-$v.classpath"
done
# Kafka's LocalTieredStorage lives in the kafka-storage test jar, which Central does not serve for every
# version (not 4.4.0): the comparison runs on the first 4.x line's.
"${MVN[@]}" -q -f java-bindings/broker-runtime/pom.xml -Dkafka.version="$FIRST4" -Plocal-tiered-storage \
  dependency:build-classpath -Dmdep.outputFile="$OUT/bench.classpath"

step "plugin on the Kafka $OLDEST API: unit tests, jar, end to end with brokers $NEWEST, $FIRST4 and $OLDEST"
"${MVN[@]}" -f java-bindings/pom.xml verify -Drsm.native.dir="$dist" -Dkafka.api.version="$OLDEST" \
  -Drsm.brokers="$NEWEST=$OUT/broker-$NEWEST.classpath,$FIRST4=$OUT/broker-$FIRST4.classpath,$OLDEST=$OUT/broker-$OLDEST.classpath" \
  -Drsm.bench.classpath="$OUT/bench.classpath" -Drsm.cli="$CARGO_TARGET_DIR/debug/rsm" "${s3_props[@]}" \
  -Drsm.aiven.fixture="$CARGO_TARGET_DIR/debug/examples/aiven_fixture" -Dit.test='*IT,!BrokerStoreFaultsIT' 2>&1 | tee "$OUT/java-tests-baseline.txt"

step "unit tests compiled and run on the Kafka $NEWEST API"
"${MVN[@]}" -f java-bindings/pom.xml test -Drsm.native.dir="$dist" -Dkafka.api.version="$NEWEST" \
  -Drsm.build.dir="$OUT/kafka-$NEWEST" 2>&1 | tee "$OUT/java-tests-newest.txt"

step "one broker under the store's bad days: Kafka $NEWEST on S3 through the fault proxy (BrokerStoreFaultsIT)"
# The Rust tests' fault-injecting proxy as a process (facade/examples/fault_proxy.rs), between the plugin and moto.
cargo build --locked -p rsm-facade --example fault_proxy
"${MVN[@]}" -f java-bindings/pom.xml verify -Drsm.native.dir="$dist" -Dkafka.api.version="$OLDEST" \
  -Drsm.brokers="$NEWEST=$OUT/broker-$NEWEST.classpath" -Dtest=NoUnitTestsHere -Dsurefire.failIfNoSpecifiedTests=false \
  -Dit.test=BrokerStoreFaultsIT -Drsm.fault.proxy="$CARGO_TARGET_DIR/debug/examples/fault_proxy" "${s3_props[@]}" \
  2>&1 | tee "$OUT/java-tests-store-faults.txt"

# The unit tests run with -Xcheck:jni: any complaint of the JVM about our JNI use fails the run.
if grep -rlE 'WARNING in native method|FATAL ERROR in native method|JNI call made' "$OUT"/java-tests-*.txt \
    "$OUT"/surefire-reports "$OUT/kafka-$NEWEST"/surefire-reports 2>/dev/null; then
  echo "the JVM's JNI checks complained (see the files above)" >&2
  exit 1
fi

step "results"
for f in "$OUT"/e2e/*/summary.txt; do
  echo "--- $f"
  cat "$f"
done
# Sum Maven's per-run totals (the unindented "Tests run:" lines); refuse skipped tests: every test must run.
totals=$(grep -hE '^\[(INFO|WARNING|ERROR)\] Tests run: [0-9]+, Failures: [0-9]+, Errors: [0-9]+, Skipped: [0-9]+$' \
  "$OUT/java-tests-baseline.txt" "$OUT/java-tests-newest.txt" "$OUT/java-tests-store-faults.txt")
passed=$(echo "$totals" | awk -F'[:,]' '{s+=$2-$4-$6-$8} END {print s+0}')
failed=$(echo "$totals" | awk -F'[:,]' '{s+=$4+$6} END {print s+0}')
skipped=$(echo "$totals" | awk -F'[:,]' '{s+=$8} END {print s+0}')
echo "java tests took $(( $(date +%s) - start )) s"
if [[ "$skipped" != 0 ]]; then
  echo "$skipped Java tests were skipped; every test must run" >&2
  exit 1
fi
echo "java: ${passed} passed, ${failed} failed"
