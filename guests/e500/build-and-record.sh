#!/bin/sh
# Builds the vmlab e500 guest (Linux 6.1 for QEMU's ppce500 machine; an initramfs holding a
# small busybox system built from source, Debian's glibc for powerpc and this directory's C
# programs, all dynamically linked), boots it under qemu-system-ppc with the e500rec plugin,
# and writes the compressed trace to traces/. Idempotent: every step is skipped when its
# output is newer than its inputs. Needs root for apt-get (only if packages are missing) and
# for the initramfs's /dev/console node.
#
# Usage: [TRACES=DIR] guests/e500/build-and-record.sh [BUILD_DIR]
#        (defaults: guests/e500/traces, guests/e500/build)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-$HERE/build}
TRACES=${TRACES:-$HERE/traces}  # where the trace and its provenance go
JOBS=${JOBS:-2}
PACKAGES="qemu-system-ppc gcc-powerpc-linux-gnu binutils-powerpc-linux-gnu libc6-dev-powerpc-cross
libc6-powerpc-cross linux-source-6.1 bc flex bison libssl-dev libelf-dev cpio make gcc zstd
xz-utils bzip2 curl"
KSRC=$BUILD/linux-source-6.1
NAME=e500-linux-6.1-busybox       # the trace, its provenance and kernel config in $TRACES
# busybox from Debian's source package (bookworm's 1:1.35.0-4 uses this upstream tarball; the
# SHA-256 is the one its .dsc lists).
BB_VERSION=1.35.0
BB_URL=http://deb.debian.org/debian/pool/main/b/busybox/busybox_$BB_VERSION.orig.tar.bz2
BB_SHA256=faeeb244c35a348a334f4a59e44626ee870fb07b6884d68c10ae8bc19f83a694
BB=$BUILD/busybox-$BB_VERSION
GLIBC=/usr/powerpc-linux-gnu/lib   # Debian's glibc 2.36 for powerpc (libc6-powerpc-cross)
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

say "1/7 packages"
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

say "2/7 kernel (vmlinux; about 7 minutes at -j2 the first time)"
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

say "3/7 busybox $BB_VERSION (from source)"
BB_TAR=$BUILD/dl/busybox_$BB_VERSION.orig.tar.bz2
if [ ! -e "$BB_TAR" ]; then
    mkdir -p "$BUILD/dl"
    curl -fsS -o "$BB_TAR.part" "$BB_URL"
    mv "$BB_TAR.part" "$BB_TAR"
fi
echo "$BB_SHA256  $BB_TAR" | sha256sum -c --quiet - ||
    { say "$BB_TAR: SHA-256 mismatch (expected $BB_SHA256)"; exit 1; }
if ! newer "$BB/busybox" "$HERE/userland/busybox.config" "$BB_TAR"; then
    rm -rf "$BB"
    tar -C "$BUILD" -xjf "$BB_TAR"
    (cd "$BB" && make defconfig >/dev/null &&
        # The fragment's symbols replace defconfig's lines, then oldconfig settles the rest.
        for sym in $(sed -n 's/^\(CONFIG_[A-Z0-9_]*\)=.*/\1/p
                              s/^# \(CONFIG_[A-Z0-9_]*\) is not set$/\1/p' \
                         "$HERE/userland/busybox.config"); do
            sed -i "/^$sym=/d; /^# $sym is not set\$/d" .config
        done &&
        grep -E '^(CONFIG_|# CONFIG_)' "$HERE/userland/busybox.config" >>.config &&
        yes "" | make oldconfig >/dev/null 2>&1 &&
        nice -n 15 make -j"$JOBS" busybox >"$BUILD/busybox-build.log" 2>&1) ||
        { say "busybox build failed: see $BUILD/busybox-build.log"; exit 1; }
fi

say "4/7 userland and initramfs"
U=$HERE/userland
sed -n 's/^PHASE(\([0-9]*\), *\([a-z0-9_]*\), *\([0-9]*\))$/\1\t\2\t\3/p' "$U/phases.def" \
    >"$BUILD/phases.txt"
ROOT=$BUILD/initramfs
if ! newer "$BUILD/initramfs.cpio.gz" "$U"/*.c "$U"/*.h "$U/phases.def" "$BB/busybox" "$0" \
    $(find "$U/rootfs"); then
    rm -rf "$ROOT"
    mkdir -p "$ROOT"
    cp -a "$U/rootfs/." "$ROOT/"
    (cd "$ROOT" && mkdir -p bin sbin usr/bin usr/sbin lib/powerpc-linux-gnu dev proc sys tmp \
        run data root var/log usr/share/vmlab && chmod 1777 tmp)
    mknod -m 600 "$ROOT/dev/console" c 5 1
    # busybox and its applet links, as `make install` lays them out.
    (cd "$BB" && make CONFIG_PREFIX="$ROOT" install >/dev/null)
    # The dynamic loader and the libraries the programs need, where Debian puts them.
    cp "$GLIBC/ld.so.1" "$ROOT/lib/"
    for l in libc.so.6 libm.so.6 libresolv.so.2; do
        cp "$GLIBC/$l" "$ROOT/lib/powerpc-linux-gnu/"
    done
    # This directory's programs, dynamically linked.
    for p in bench mark hello seedrng; do
        powerpc-linux-gnu-gcc -O2 -Wall -s -o "$BUILD/$p" "$U/$p.c"
    done
    cp "$BUILD/bench" "$ROOT/usr/bin/vmlab-bench"
    cp "$BUILD/mark" "$ROOT/usr/bin/vmlab-mark"
    cp "$BUILD/hello" "$ROOT/bin/hello"
    cp "$BUILD/seedrng" "$ROOT/usr/sbin/vmlab-seedrng"
    # The tree the rc scripts unpack on the data file system and `find` walks: arch/powerpc
    # of the same kernel source (2,125 entries), with the checksums they verify it against.
    rm -rf "$BUILD/tree" && mkdir -p "$BUILD/tree"
    tar -C "$BUILD/tree" -xf /usr/src/linux-source-6.1.tar.xz --strip-components=1 \
        linux-source-6.1/arch/powerpc
    (cd "$BUILD/tree" && find . -type f | sort | xargs sha256sum) \
        >"$ROOT/usr/share/vmlab/tree.sha256"
    (cd "$BUILD/tree" && find . | sort | tar -cf - --no-recursion -T - --mtime=@0 \
        --owner=0 --group=0 --numeric-owner) | gzip -n -9 >"$ROOT/usr/share/vmlab/tree.tar.gz"
    find "$ROOT" -exec touch -h -d @0 {} +
    (cd "$ROOT" && find . | sort | cpio -o -H newc -R 0:0 --reproducible --quiet) |
        gzip -n -9 >"$BUILD/initramfs.cpio.gz"
fi

say "5/7 recorder plugin"
if ! newer "$BUILD/e500rec.so" "$HERE/plugin/e500rec.c"; then
    gcc -O2 -Wall -fPIC -shared -fvisibility=hidden -o "$BUILD/e500rec.so" "$HERE/plugin/e500rec.c"
fi

say "6/7 provenance"
TRACE=$TRACES/$NAME.trace.zst
QEMU_CMD="qemu-system-ppc -M ppce500 -cpu e500v2 -m 256 -display none -nic none -no-reboot
 -icount shift=0,sleep=off -rtc clock=vm -kernel vmlinux -initrd initramfs.cpio.gz
 -append 'console=ttyS0 norandmaps rdinit=/sbin/init' -plugin e500rec.so,out=TRACE,map=System.map,phases=phases.txt,meta=meta.txt,zstd=1
 (then zstd -19 --long=26)"
{
    echo "format=vmlab e500 trace v1"
    echo "command=$(echo $QEMU_CMD)"
    for p in qemu-system-ppc gcc-powerpc-linux-gnu libc6-dev-powerpc-cross libc6-powerpc-cross \
        linux-source-6.1 zstd; do
        echo "package.$p=$(dpkg-query -W -f='${Version}' "$p")"
    done
    echo "busybox.source=$BB_URL"
    echo "busybox.source.sha256=$BB_SHA256"
    echo "busybox.sha256=$(sha256sum <"$BB/busybox" | cut -d' ' -f1)"
    echo "kernel.release=$(cat "$KSRC/include/config/kernel.release")"
    echo "kernel.config.sha256=$(sha256sum <"$KSRC/.config" | cut -d' ' -f1)"
    echo "vmlinux.sha256=$(sha256sum <"$KSRC/vmlinux" | cut -d' ' -f1)"
    echo "initramfs.sha256=$(sha256sum <"$BUILD/initramfs.cpio.gz" | cut -d' ' -f1)"
} >"$BUILD/meta.txt"
cp "$BUILD/meta.txt" "$TRACES/$NAME.PROVENANCE.txt"
grep -v '^#' "$KSRC/.config" | grep . >"$TRACES/$NAME.kernel.config"

say "7/7 boot and record (QEMU exits when the guest powers off)"
start=$(date +%s)
# The plugin writes a fast zstd -1 stream; it is recompressed below.
RAW=$BUILD/$NAME.trace.fast.zst
(cd "$BUILD" && timeout 600 qemu-system-ppc -M ppce500 -cpu e500v2 -m 256 -display none \
    -nic none -no-reboot -icount shift=0,sleep=off -rtc clock=vm \
    -kernel "$KSRC/vmlinux" -initrd initramfs.cpio.gz \
    -append "console=ttyS0 norandmaps rdinit=/sbin/init" \
    -plugin "$BUILD/e500rec.so,out=$RAW,map=$KSRC/System.map,phases=phases.txt,meta=meta.txt,zstd=1" \
    -serial file:"$BUILD/console.log" -monitor none </dev/null) ||
    { say "QEMU failed or timed out: see $BUILD/console.log"; exit 1; }
grep -q "benchmarks done" "$BUILD/console.log" && grep -q "reboot: Power down" "$BUILD/console.log" ||
    { say "the guest did not finish its benchmarks and power off: see $BUILD/console.log"; exit 1; }
say "recorded $RAW ($(du -h "$RAW" | cut -f1)) in $(($(date +%s) - start)) s"
# The committed file: zstd -19 with a 64 MiB long-distance window (--long=26), about 30%
# smaller than the recorder's -12 for this trace (docs/e500-trace.md). Any zstd decoder reads
# it (the window is within zstd's default decoding limit of 128 MiB).
start=$(date +%s)
zstd -q -d -c "$RAW" | nice -n 10 zstd -q -f -19 --long=26 -T"$JOBS" -o "$TRACE"
say "compressed $TRACE ($(du -h "$TRACE" | cut -f1)) in $(($(date +%s) - start)) s"
