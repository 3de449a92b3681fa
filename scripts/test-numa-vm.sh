#!/usr/bin/env bash
# ember's NUMA tests on a real multi-node kernel: boots small QEMU guests
# with 2 and 4 NUMA nodes (TCG: the /dev/kvm of a nested paravirtual host
# cannot run a stock kernel) and runs, inside each,
#   - crates/ember/tests/numa.rs --ignored: the topology read from the
#     guest's sysfs, a file whose page-cache pages were written stripe by
#     stripe from threads bound to each node mapped with the kernel saying
#     (get_mempolicy) which node holds each split, and a locality hit rate
#     of at least 75% aware (blind, printed for comparison);
#   - crates/ember-apps/tests/numa.rs --ignored: every workload's output
#     equal to its sequential oracle's on the machine's own topology;
#   - with --bench, `ember-bench numa --machine` (aware vs blind: hit
#     rates, steals, times; a VM on one physical node shows no latency
#     difference, so the times are not the claim).
# The guest's /init prints the results on the serial console and powers
# off; this script checks for each test binary's "test result: ok" and the
# final NUMA-VM-RESULT line. See docs/numa.md.
#
# Usage: scripts/test-numa-vm.sh [--ci] [--release] [--bench] [--nodes "2 4"]
#   --ci       after `cargo test --workspace` (as .ci/run does): take its
#              test binaries (asking cargo for them as `cargo test
#              --workspace` built them, so nothing is rebuilt) and boot
#              the guests; no bench
#   --release  build and boot release binaries (default: the test
#              profile's, built for the two test binaries alone)
#   --bench    also run `ember-bench numa --machine --size 16MiB --runs 3`
#              in each guest (implies --release)
#
# Installs what is missing (apt-get: qemu-system-x86, busybox-static, cpio)
# and fetches Debian's kernel once (`apt-get download` of the package
# linux-image-amd64 depends on, extracted with dpkg-deb, not installed)
# into a cache kept across clones and runs: $EMBER_VM_CACHE, else
# ${XDG_CACHE_HOME:-~/.cache}/ember/numa-vm (delete it to fetch the
# kernel Debian points at now).
set -euo pipefail
cd "$(dirname "$0")/.."

profile=debug
bench=0
ci=0
nodes_list="2 4"
while [ $# -gt 0 ]; do
  case "$1" in
    --ci) ci=1 ;;
    --release) profile=release ;;
    --bench) bench=1; profile=release ;;
    --nodes) nodes_list=${2:?--nodes needs a list, e.g. "2 4"}; shift ;;
    *) echo "test-numa-vm.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
if [ "$ci" = 1 ] && [ "$profile" = release ]; then
  echo "test-numa-vm.sh: --ci boots the test profile's binaries: no --release or --bench" >&2
  exit 2
fi
start=$(date +%s)
target=${CARGO_TARGET_DIR:-target}
work=$target/numa-vm
cache=${EMBER_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ember/numa-vm}
mkdir -p "$work" "$cache"

# 1. The host's tools.
if ! command -v qemu-system-x86_64 >/dev/null 2>&1 || [ ! -x /bin/busybox ] \
  || ! command -v cpio >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-system-x86 busybox-static cpio
fi

# 2. The guest's kernel: the versioned package Debian's linux-image-amd64
# points at.
if [ ! -f "$cache/vmlinuz" ]; then
  rm -rf "$work/deb" && mkdir -p "$work/deb"
  (
    cd "$work/deb"
    apt-get download linux-image-amd64 2>/dev/null || { apt-get update -qq && apt-get download linux-image-amd64; }
    pkg=$(dpkg-deb -f linux-image-amd64_*.deb Depends | grep -o 'linux-image-[0-9][^ ,]*' | head -n1)
    apt-get download "$pkg"
    dpkg-deb -x "$pkg"_*.deb x
  )
  # Written whole, then renamed: an interrupted copy leaves no kernel.
  cp "$work"/deb/x/boot/vmlinuz-* "$cache/vmlinuz.part"
  mv "$cache/vmlinuz.part" "$cache/vmlinuz"
  rm -rf "$work/deb"
fi
echo "test-numa-vm.sh: tools and kernel ready after $(($(date +%s) - start)) s"

# 3. The binaries: the two NUMA test binaries (and ember-bench for --bench).
built=$(date +%s)
flag=(-p ember --test numa -p ember-apps --test numa)
[ "$profile" = release ] && flag+=(--release)
[ "$ci" = 1 ] && flag=(--workspace)
tests=$(cargo test "${flag[@]}" --locked --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "numa":
        crate = {"ember": "ember", "ember-apps": "apps"}.get(m["package_id"].split("#")[0].rsplit("/", 1)[-1])
        if crate:
            print(crate + "=" + m["executable"])
')
ember_numa=$(echo "$tests" | sed -n 's/^ember=//p')
apps_numa=$(echo "$tests" | sed -n 's/^apps=//p')
[ -x "$ember_numa" ] && [ -x "$apps_numa" ] || { echo "test-numa-vm.sh: test binaries not built" >&2; exit 1; }
if [ "$bench" = 1 ]; then
  cargo build --release --locked -p ember-bench
fi
echo "test-numa-vm.sh: binaries ready in $(($(date +%s) - built)) s"

# 4. The initramfs: busybox, the binaries and the shared libraries they
# load (as ldd lists them), and /init.
root=$work/root
rm -rf "$root" && mkdir -p "$root"/{bin,dev,proc,sys,tmp,t,lib64}
cp /bin/busybox "$root/bin/"
for cmd in sh mount mkdir cat echo poweroff grep; do ln -s busybox "$root/bin/$cmd"; done
mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true
cp "$ember_numa" "$root/t/ember-numa"
cp "$apps_numa" "$root/t/apps-numa"
[ "$bench" = 1 ] && cp "$target/release/ember-bench" "$root/t/ember-bench"
# Debug info is most of their size; the guest needs none of it.
strip "$root"/t/* 2>/dev/null || true
for bin in "$root"/t/*; do
  for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
done
cat > "$root/init" <<INIT
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmp /tmp
export HOME=/tmp TMPDIR=/tmp EMBER_CACHE=/tmp/cache RUST_BACKTRACE=1
echo "NUMA-VM nodes online: \$(cat /sys/devices/system/node/online)"
echo "NUMA-VM automatic NUMA balancing: \$(cat /proc/sys/kernel/numa_balancing 2>/dev/null || echo absent)"
for n in /sys/devices/system/node/node*; do
  echo "NUMA-VM \${n##*/}: cpus \$(cat \$n/cpulist), distances \$(cat \$n/distance)"
done
ok=1
/t/ember-numa --ignored --test-threads=1 --nocapture || ok=0
/t/apps-numa --ignored --test-threads=1 || ok=0
if [ -x /t/ember-bench ]; then
  /t/ember-bench numa --machine --size 16MiB --runs 3 || ok=0
fi
echo "NUMA-VM-RESULT \$ok"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 > "$work/initramfs.gz"

# 5. Boot a guest per node count: 4 vCPUs, 2 GiB, one memory backend per
# node.
failed=0
for nodes in $nodes_list; do
  per=$((2048 / nodes))
  numa=()
  for ((i = 0; i < nodes; i++)); do
    cpus_per=$((4 / nodes))
    first=$((i * cpus_per))
    last=$((first + cpus_per - 1))
    numa+=(-object "memory-backend-ram,id=m$i,size=${per}M"
      -numa "node,nodeid=$i,memdev=m$i,cpus=$first-$last")
  done
  log=$work/guest-$nodes-nodes.log
  boot=$(date +%s)
  timeout 900 qemu-system-x86_64 -accel tcg -cpu max -m 2048 \
    -smp "4,sockets=$nodes,cores=$((4 / nodes))" "${numa[@]}" \
    -kernel "$cache/vmlinuz" -initrd "$work/initramfs.gz" \
    -append "console=ttyS0 quiet panic=-1 rdinit=/init" \
    -nographic -no-reboot -net none -serial mon:stdio </dev/null | tr -d '\r' > "$log" || true
  secs=$(($(date +%s) - boot))
  oks=$(grep -c '^test result: ok' "$log" || true)
  if grep -q '^NUMA-VM-RESULT 1' "$log" && [ "$oks" -ge 2 ]; then
    echo "numa vm, $nodes nodes: ok ($secs s; output in $log)"
  else
    echo "numa vm, $nodes nodes: FAILED ($secs s); the guest's output:"
    cat "$log"
    failed=1
  fi
  grep -E '^NUMA-VM|hit rate|chunk 0:|^topology' "$log" | sed 's/^/  /'
done
echo "test-numa-vm.sh: $(($(date +%s) - start)) s in all"
exit $failed
