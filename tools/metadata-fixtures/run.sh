#!/bin/sh
# Writes rsm-metadata/tests/data/kafka-<version>/ from Kafka's real classes, for every version given
# (default: 3.9.2 4.0.0 4.4.0). Offline first (~/.m2), then online. See pom.xml.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -gt 0 ] || set -- 3.9.2 4.0.0 4.4.0
cd "$here"
for v in "$@"; do
  rm -rf target
  mvn -o -q -Dkafka.version="$v" compile dependency:build-classpath -Dmdep.outputFile=target/cp.txt \
    || mvn -q -Dkafka.version="$v" compile dependency:build-classpath -Dmdep.outputFile=target/cp.txt
  java -cp "target/classes:$(cat target/cp.txt)" MetadataFixtures "$v" "$root/rsm-metadata/tests/data/kafka-$v"
done
rm -rf target
