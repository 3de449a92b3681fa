#!/bin/sh
# The long soak (issue #22): one Runtime runs every workload ROUNDS times
# (default 1000), mixed with failing runs, and checks every result against
# the sequential oracles and that RSS, threads and open file descriptors
# stay level after the warm-up. The same test runs 200 rounds in CI
# (crates/ember-apps/tests/soak.rs). Prints the figures for
# docs/measurements.md.
#
# Usage: scripts/soak.sh [ROUNDS]
set -eu
cd "$(dirname "$0")/.."
rounds=${1:-${EMBER_SOAK_ROUNDS:-1000}}
EMBER_SOAK_ROUNDS=$rounds exec cargo test -p ember-apps --test soak --locked -- --nocapture
