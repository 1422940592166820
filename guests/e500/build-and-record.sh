#!/bin/sh
# Builds the vmlab e500 guest (Linux 6.1 for QEMU's ppce500 machine, an initramfs of this
# directory's static C programs), boots it under qemu-system-ppc with the e500rec plugin,
# and writes the compressed trace to traces/. Idempotent: every step is skipped when its
# output is newer than its inputs. Needs root for apt-get (only if packages are missing).
#
# Usage: [TRACES=DIR] guests/e500/build-and-record.sh [BUILD_DIR]
#        (defaults: guests/e500/traces, guests/e500/build)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-$HERE/build}
TRACES=${TRACES:-$HERE/traces}  # where the trace and its provenance go
JOBS=${JOBS:-2}
PACKAGES="qemu-system-ppc gcc-powerpc-linux-gnu binutils-powerpc-linux-gnu libc6-dev-powerpc-cross
linux-source-6.1 bc flex bison libssl-dev libelf-dev cpio make gcc zstd xz-utils"
KSRC=$BUILD/linux-source-6.1
KMAKE="make ARCH=powerpc CROSS_COMPILE=powerpc-linux-gnu-"
# Fixed identity so vmlinux (and so the trace) is the same on every machine.
export KBUILD_BUILD_TIMESTAMP="Thu Jan  1 00:00:00 UTC 1970" KBUILD_BUILD_USER=vmlab \
       KBUILD_BUILD_HOST=vmlab KBUILD_BUILD_VERSION=1 SOURCE_DATE_EPOCH=0 LC_ALL=C
say() { printf '[e500] %s\n' "$*"; }
newer() { # newer OUT IN...: true when OUT exists and is newer than every IN
    out=$1; shift
    [ -e "$out" ] || return 1
    for f in "$@"; do [ "$f" -nt "$out" ] && return 1; done
    return 0
}

say "1/6 packages"
missing=""
for p in $PACKAGES; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    say "installing:$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi
mkdir -p "$BUILD" "$TRACES"

say "2/6 kernel (vmlinux; about 7 minutes at -j2 the first time)"
if [ ! -d "$KSRC" ]; then
    tar -C "$BUILD" -xf /usr/src/linux-source-6.1.tar.xz
fi
if ! newer "$KSRC/.config" "$HERE/kernel/e500.config"; then
    (cd "$KSRC" && $KMAKE allnoconfig >/dev/null &&
        scripts/kconfig/merge_config.sh -m .config "$HERE/kernel/e500.config" >/dev/null &&
        $KMAKE olddefconfig >/dev/null)
fi
(cd "$KSRC" && nice -n 15 $KMAKE -j"$JOBS" vmlinux >"$BUILD/kernel-build.log" 2>&1) ||
    { say "kernel build failed: see $BUILD/kernel-build.log"; exit 1; }

say "3/6 userland and initramfs"
U=$HERE/userland
sed -n 's/^PHASE(\([0-9]*\), *\([a-z0-9_]*\), *\([0-9]*\))$/\1\t\2\t\3/p' "$U/phases.def" \
    >"$BUILD/phases.txt"
ROOT=$BUILD/initramfs
if ! newer "$BUILD/initramfs.cpio.gz" "$U"/*.c "$U"/*.h "$U/phases.def" "$0"; then
    rm -rf "$ROOT"
    mkdir -p "$ROOT/bin" "$ROOT/dev" "$ROOT/proc" "$ROOT/tree"
    for p in init echo hello sh; do
        powerpc-linux-gnu-gcc -static -O2 -Wall -o "$BUILD/$p" "$U/$p.c"
    done
    cp "$BUILD/init" "$ROOT/init"
    cp "$BUILD/echo" "$BUILD/hello" "$BUILD/sh" "$ROOT/bin/"
    # The tree `find` walks: the PowerPC headers of the same kernel source.
    tar -C "$ROOT/tree" -xf /usr/src/linux-source-6.1.tar.xz linux-source-6.1/arch/powerpc/include
    find "$ROOT" -exec touch -h -d @0 {} +
    (cd "$ROOT" && find . | sort | cpio -o -H newc -R 0:0 --reproducible --quiet) |
        gzip -n -9 >"$BUILD/initramfs.cpio.gz"
fi

say "4/6 recorder plugin"
if ! newer "$BUILD/e500rec.so" "$HERE/plugin/e500rec.c"; then
    gcc -O2 -Wall -fPIC -shared -fvisibility=hidden -o "$BUILD/e500rec.so" "$HERE/plugin/e500rec.c"
fi

say "5/6 provenance"
TRACE=$TRACES/e500-linux-6.1.trace.zst
QEMU_CMD="qemu-system-ppc -M ppce500 -cpu e500v2 -m 256 -display none -nic none -no-reboot
 -icount shift=0,sleep=off -rtc clock=vm -kernel vmlinux -initrd initramfs.cpio.gz
 -append 'console=ttyS0 norandmaps' -plugin e500rec.so,out=TRACE,map=System.map,phases=phases.txt,meta=meta.txt"
{
    echo "format=vmlab e500 trace v1"
    echo "command=$(echo $QEMU_CMD)"
    for p in qemu-system-ppc gcc-powerpc-linux-gnu libc6-dev-powerpc-cross linux-source-6.1 zstd; do
        echo "package.$p=$(dpkg-query -W -f='${Version}' "$p")"
    done
    echo "kernel.release=$(cat "$KSRC/include/config/kernel.release")"
    echo "kernel.config.sha256=$(sha256sum <"$KSRC/.config" | cut -d' ' -f1)"
    echo "vmlinux.sha256=$(sha256sum <"$KSRC/vmlinux" | cut -d' ' -f1)"
    echo "initramfs.sha256=$(sha256sum <"$BUILD/initramfs.cpio.gz" | cut -d' ' -f1)"
} >"$BUILD/meta.txt"
cp "$BUILD/meta.txt" "$TRACES/PROVENANCE.txt"
grep -v '^#' "$KSRC/.config" | grep . >"$TRACES/kernel.config"

say "6/6 boot and record (QEMU exits when the guest powers off)"
start=$(date +%s)
(cd "$BUILD" && timeout 600 qemu-system-ppc -M ppce500 -cpu e500v2 -m 256 -display none \
    -nic none -no-reboot -icount shift=0,sleep=off -rtc clock=vm \
    -kernel "$KSRC/vmlinux" -initrd initramfs.cpio.gz -append "console=ttyS0 norandmaps" \
    -plugin "$BUILD/e500rec.so,out=$TRACE,map=$KSRC/System.map,phases=phases.txt,meta=meta.txt" \
    -serial file:"$BUILD/console.log" -monitor none </dev/null) ||
    { say "QEMU failed or timed out: see $BUILD/console.log"; exit 1; }
grep -q "benchmarks done" "$BUILD/console.log" ||
    { say "the guest did not finish its benchmarks: see $BUILD/console.log"; exit 1; }
say "recorded $TRACE ($(du -h "$TRACE" | cut -f1)) in $(($(date +%s) - start)) s"
