#!/bin/sh
# build-deb.sh — stage the appliance's files into a tree and build the `zaris`
# Debian package from it with dpkg-deb (no debhelper: the tree is small and
# every file's path and mode is written out here, once).
#
#   image/build-deb.sh BINDIR VERSION OUTDIR [CONF]
#
# BINDIR holds zarisd, zaris-supervisor, zarisctl and libzaris (libzaris.so.1,
# libzaris.a: the build directory);
# CONF is the packaged /etc/zaris.conf (default config/zaris.conf). Prints the
# path of the built .deb on stdout. Depends: is derived from the binaries'
# NEEDED entries with dpkg-shlibdeps, so it always names exactly the runtime
# libraries they link.
set -eu

[ $# -ge 3 ] || { echo "usage: $0 BINDIR VERSION OUTDIR [CONF]" >&2; exit 2; }
bindir=$1
version=$2
outdir=$3
here=$(cd "$(dirname "$0")" && pwd)
conf=${4:-$here/../config/zaris.conf}

for f in zarisd zaris-supervisor zarisctl libzaris.so.1 libzaris.a; do
	[ -f "$bindir/$f" ] || { echo "$0: $bindir/$f missing (make it first)" >&2; exit 1; }
done
[ -f "$conf" ] || { echo "$0: $conf missing" >&2; exit 1; }

arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
# A fixed timestamp keeps the package reproducible from the same inputs:
# the last commit's, else (no git, no commit yet) control.in's mtime.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	SOURCE_DATE_EPOCH=$(git -C "$here" log -1 --format=%ct 2>/dev/null) ||
		SOURCE_DATE_EPOCH=
	[ -n "$SOURCE_DATE_EPOCH" ] || SOURCE_DATE_EPOCH=$(stat -c %Y "$here/deb/control.in")
fi
export SOURCE_DATE_EPOCH

work=$(mktemp -d "${TMPDIR:-/tmp}/zaris-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
# dpkg-shlibdeps wants the debian/<package>/ layout and a debian/control.
root=$work/debian/zaris
mkdir -p "$root/DEBIAN"
umask 022

# --- payload ---------------------------------------------------------------
strip_into() { # SRC DEST MODE: what dh_strip does, on a copy
	install -D -m "$3" "$1" "$2"
	strip --strip-unneeded --remove-section=.comment --remove-section=.note "$2"
}
strip_into "$bindir/zarisd"           "$root/usr/sbin/zarisd" 0755
strip_into "$bindir/zaris-supervisor" "$root/usr/sbin/zaris-supervisor" 0755
strip_into "$bindir/zarisctl"         "$root/usr/bin/zarisctl" 0755

# libzaris, the native protocol's C client: the shared library (its
# soname's file, and the .so link a linker looks for), the archive, the
# header and the pkg-config file, whose paths are this package's.
lib=$root/usr/lib/$multiarch
strip_into "$bindir/libzaris.so.1" "$lib/libzaris.so.1" 0644
ln -s libzaris.so.1 "$lib/libzaris.so"
install -D -m 0644 "$bindir/libzaris.a" "$lib/libzaris.a"
strip --strip-debug --enable-deterministic-archives "$lib/libzaris.a"
install -D -m 0644 "$here/../zarisd/client/zaris.h" "$root/usr/include/zaris/zaris.h"
mkdir -p "$lib/pkgconfig"
sed -e 's|@PREFIX@|/usr|' -e "s|@LIBDIR@|/usr/lib/$multiarch|" -e 's|@INCLUDEDIR@|/usr/include|' \
	-e "s|@VERSION@|$version|" "$here/../zarisd/client/zaris.pc.in" > "$lib/pkgconfig/zaris.pc"
chmod 0644 "$lib/pkgconfig/zaris.pc"
install -D -m 0644 "$here/deb/lintian-overrides" "$root/usr/share/lintian/overrides/zaris"

install -D -m 0644 "$conf"                     "$root/etc/zaris.conf"
install -D -m 0644 "$here/limits/zaris.conf"   "$root/etc/security/limits.d/zaris.conf"
install -D -m 0644 "$here/zaris.service"       "$root/lib/systemd/system/zaris.service"
install -D -m 0644 "$here/zaris-thp.service"   "$root/lib/systemd/system/zaris-thp.service"
install -D -m 0644 "$here/sysctl/zaris.conf"   "$root/usr/lib/sysctl.d/60-zaris.conf"

man=$root/usr/share/man
for page in zarisd.8 zaris-supervisor.8 zarisctl.1; do
	sec=${page##*.}
	mkdir -p "$man/man$sec"
	gzip -9n < "$here/man/$page" > "$man/man$sec/$page.gz"
	chmod 0644 "$man/man$sec/$page.gz"
done

doc=$root/usr/share/doc/zaris
install -D -m 0644 "$here/deb/copyright" "$doc/copyright"
date_r=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
sed -e "s/@VERSION@/$version/" -e "s/@DATE@/$date_r/" "$here/deb/changelog.in" \
	| gzip -9n > "$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"

# --- control area ----------------------------------------------------------
for s in postinst prerm postrm; do
	install -m 0755 "$here/deb/$s" "$root/DEBIAN/$s"
done
# libzaris.so.1: ldconfig runs when it is installed or removed, and a
# program linked against it depends on this package at this version or later.
printf 'activate-noawait ldconfig\n' > "$root/DEBIAN/triggers"
printf 'libzaris 1 zaris (>= %s)\n' "$version" > "$root/DEBIAN/shlibs"
chmod 0644 "$root/DEBIAN/triggers" "$root/DEBIAN/shlibs"
# Every file under /etc is a conffile: dpkg keeps an operator's edits on
# upgrade and removes the files only on purge.
(cd "$root" && find etc -type f | sort | sed 's|^|/|') > "$root/DEBIAN/conffiles"
chmod 0644 "$root/DEBIAN/conffiles"

printf 'Source: zaris\n\nPackage: zaris\nArchitecture: any\n' > "$work/debian/control"
depends=$(cd "$work" && dpkg-shlibdeps -O \
	-e"debian/zaris/usr/sbin/zarisd" -e"debian/zaris/usr/sbin/zaris-supervisor" \
	-e"debian/zaris/usr/bin/zarisctl" -e"debian/zaris/usr/lib/$multiarch/libzaris.so.1" \
	| sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "$0: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" \
	-e "s/@DEPENDS@/adduser, procps, $depends/" "$here/deb/control.in" > "$root/DEBIAN/control"

(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z \
	| xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums"

# Every file and directory carries the same mtime, so the .deb depends on
# content only.
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$outdir"
deb=$outdir/zaris_${version}_$arch.deb
# built beside it and renamed over it: whoever reads the previous .deb
# (a packer upload, a parallel test) keeps reading a whole file
trap 'rm -rf "$work" "$deb.tmp.$$"' EXIT
dpkg-deb -Zxz --root-owner-group --build "$root" "$deb.tmp.$$" >/dev/null
mv -f "$deb.tmp.$$" "$deb"
echo "$deb"
