#!/usr/bin/env bash
# build/kafka.sh: fetches the jars of Kafka $MMI_KAFKA_VERSION (broker, KRaft, storage tool, log4j2
# binding) from Maven Central into $MMI_PEERS_HOME/kafka-$MMI_KAFKA_VERSION/libs, using
# tests/peers/kafka/pom.xml. bin/start-kafka runs `java -cp 'libs/*' kafka.Kafka` from there.
# Idempotent: a stamp (Kafka version + hash of the pom) makes a second run return at once.
source "$(dirname "$0")/../lib.sh"

pom="$MMI_REPO_ROOT/tests/peers/kafka/pom.xml"
dest="$MMI_PEERS_HOME/kafka-$MMI_KAFKA_VERSION"
libs="$dest/libs"
stamp="$dest/.complete"
want="$MMI_KAFKA_VERSION $(sha256sum "$pom" | cut -d' ' -f1)"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
   && compgen -G "$libs/kafka_2.13-$MMI_KAFKA_VERSION.jar" >/dev/null; then
  log "kafka $MMI_KAFKA_VERSION already fetched: $libs"
  exit 0
fi

command -v mvn >/dev/null || die "mvn is not installed"
command -v java >/dev/null || die "java is not installed"

fetch_jars() {
  rm -rf "$libs.tmp"
  # (Debian's Maven 3.8 prints bare colour resets even with -B -q; they are stripped.)
  mvn -q -B -f "$pom" -Dkafka.version="$MMI_KAFKA_VERSION" \
    dependency:copy-dependencies -DoutputDirectory="$libs.tmp" -DincludeScope=runtime 2>&1 \
    | sed -e $'s/\e\\[[0-9;]*m//g' >&2
  rm -rf "$libs"
  mv "$libs.tmp" "$libs"
}

mkdir -p "$dest"
rm -f "$stamp"
timed "fetch kafka $MMI_KAFKA_VERSION jars" fetch_jars
[ -f "$libs/kafka_2.13-$MMI_KAFKA_VERSION.jar" ] || die "kafka_2.13-$MMI_KAFKA_VERSION.jar missing in $libs"
echo "$want" > "$stamp"
log "kafka $MMI_KAFKA_VERSION ready: $libs ($(ls "$libs" | wc -l) jars)"
