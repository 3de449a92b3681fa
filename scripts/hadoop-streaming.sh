#!/bin/sh
# Runs Hadoop's own streaming runner (org.apache.hadoop.streaming.HadoopStreaming)
# in local mode on this machine, with no Hadoop installation: the jars come
# from Maven Central through scripts/hadoop/pom.xml, fetched once into
# ${EMBER_CACHE:-$HOME/.cache/ember}/hadoop/VERSION/lib and reused after.
# See docs/hadoop.md.
#
# Usage:
#   scripts/hadoop-streaming.sh [-D key=value ...] -input IN -output OUT \
#       -mapper CMD [-combiner CMD] [-reducer CMD] [-numReduceTasks N] ...
#   scripts/hadoop-streaming.sh --fetch       fetch the jars (if not cached) and print where they are
#   scripts/hadoop-streaming.sh --classpath   the same, then print the classpath
#
# The arguments are the streaming runner's own (`-info` lists them). Before
# them the script puts the local-mode settings:
#   -D mapreduce.framework.name=local -D fs.defaultFS=file:///
#   -D mapreduce.local.map.tasks.maximum=NPROC (and reduce): tasks run in parallel
#   -D hadoop.tmp.dir=... and the staging dir in a temporary directory of
#      this run (removed at the end), not in /tmp/hadoop-$USER
# A -D you pass comes after them and wins.
#
# Hadoop splits -mapper/-combiner/-reducer commands into words itself (at
# spaces, quotes group; no shell): give programs by absolute path
# (`-mapper "/abs/ember stream map wordcount"`), or ship them with `-files`
# and name them bare.
#
# Environment:
#   EMBER_CACHE              cache root (default $HOME/.cache/ember)
#   EMBER_HADOOP_VERSION     Hadoop version to fetch (default: the pom's, 3.4.2)
#   EMBER_HADOOP_LOG         Hadoop's log level on stderr (default WARN; INFO shows progress)
#   EMBER_HADOOP_JAVA_OPTS   extra JVM options (e.g. -Xmx2g; -Dlog4j.configuration=file:... wins over the script's)
#   EMBER_HADOOP_MVN_OPTS    extra Maven options for the fetch (e.g. -s mirror-settings.xml)
#   JAVA, MVN                the java and mvn commands (default: from PATH)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
pom="$here/hadoop/pom.xml"
java=${JAVA:-java}
mvn=${MVN:-mvn}

die() {
    echo "hadoop-streaming.sh: $*" >&2
    exit 1
}

command -v "$java" >/dev/null 2>&1 || die "no '$java' on PATH (Hadoop needs Java 8 or newer, tested with 17; apt-get install openjdk-17-jre-headless)"

version=${EMBER_HADOOP_VERSION:-$(sed -n 's:.*<hadoop.version>\(.*\)</hadoop.version>.*:\1:p' "$pom")}
[ -n "$version" ] || die "cannot read hadoop.version from $pom"
cache=${EMBER_CACHE:-${HOME:?}/.cache/ember}/hadoop/$version
lib=$cache/lib
# The pom's digest: a changed pom fetches again.
stamp=$(cksum <"$pom" | cut -d' ' -f1)

fetch() {
    if [ -f "$cache/stamp" ] && [ "$(cat "$cache/stamp")" = "$stamp" ] && [ -d "$lib" ]; then
        return 0
    fi
    command -v "$mvn" >/dev/null 2>&1 || die "no '$mvn' on PATH (Maven 3 fetches the Hadoop jars once; apt-get install maven)"
    mkdir -p "$cache"
    # One fetch at a time; a second caller waits and then finds the cache.
    exec 9>"$cache/.lock"
    if command -v flock >/dev/null 2>&1; then flock 9; fi
    if [ -f "$cache/stamp" ] && [ "$(cat "$cache/stamp")" = "$stamp" ] && [ -d "$lib" ]; then
        exec 9>&-
        return 0
    fi
    echo "hadoop-streaming.sh: fetching Hadoop $version's streaming runner and its dependencies into $lib (once)" >&2
    rm -rf "$cache/lib.partial" "$lib" "$cache/stamp"
    log=$cache/fetch.log
    # shellcheck disable=SC2086 # EMBER_HADOOP_MVN_OPTS is a list of options
    if ! "$mvn" ${EMBER_HADOOP_MVN_OPTS:-} -q -B -f "$pom" -Dhadoop.version="$version" \
        dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$cache/lib.partial" >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        die "mvn could not fetch Hadoop $version (the whole log: $log)"
    fi
    ls "$cache/lib.partial"/hadoop-streaming-*.jar >/dev/null 2>&1 ||
        die "mvn finished but fetched no hadoop-streaming jar (log: $log)"
    mv "$cache/lib.partial" "$lib"
    echo "$stamp" >"$cache/stamp"
    exec 9>&-
}

case "${1:-}" in
--fetch)
    fetch
    echo "$lib"
    exit 0
    ;;
--classpath)
    fetch
    echo "$lib/*"
    exit 0
    ;;
"" | -h | --help)
    sed -n '2,/^set -eu/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    [ $# -gt 0 ] && exit 0
    exit 2
    ;;
esac

fetch

tasks=$(nproc 2>/dev/null || echo 2)
run=$(mktemp -d "${TMPDIR:-/tmp}/ember-hadoop.XXXXXX")
child=
# shellcheck disable=SC2317 # cleanup and stop run from traps
cleanup() {
    rm -rf "$run"
}
# Ctrl-C or a TERM stops the JVM and the tasks' commands it started, then
# removes the run's directory. The JVM runs in the background so that the
# signal reaches this shell at once; it is told with TERM, as a background
# JVM ignores SIGINT.
# shellcheck disable=SC2317
stop() {
    if [ -n "$child" ]; then
        pids=$(pgrep -P "$child" 2>/dev/null || true)
        # shellcheck disable=SC2086 # a list of process ids
        kill -TERM "$child" $pids 2>/dev/null || true
        wait "$child" 2>/dev/null || true
    fi
    exit "$1"
}
trap cleanup EXIT
trap 'stop 130' INT
trap 'stop 143' TERM

# shellcheck disable=SC2086 # EMBER_HADOOP_JAVA_OPTS is a list of options
"$java" -Dlog4j.configuration="file:$here/hadoop/log4j.properties" \
    -Dhadoop.root.logger="${EMBER_HADOOP_LOG:-WARN},console" \
    -Djava.io.tmpdir="$run" \
    ${EMBER_HADOOP_JAVA_OPTS:-} \
    -cp "$lib/*" org.apache.hadoop.streaming.HadoopStreaming \
    -D mapreduce.framework.name=local \
    -D fs.defaultFS=file:/// \
    -D hadoop.tmp.dir="$run/hadoop" \
    -D mapreduce.jobtracker.staging.root.dir="$run/staging" \
    -D mapreduce.local.map.tasks.maximum="$tasks" \
    -D mapreduce.local.reduce.tasks.maximum="$tasks" \
    "$@" <&0 &
child=$!
status=0
wait "$child" || status=$?
child=
exit "$status"
