#!/bin/bash
# deb.t — `make deb`: the package's version, contents, conffiles and
# maintainer scripts; Depends: names the package of every library the
# binaries link (checked independently of dpkg-shlibdeps, with objdump -p);
# lintian reports no error or warning; the build is reproducible.
# Installing, upgrading and purging it run in appliance.t (booted system).
set -u
source "$(dirname "$0")/lib.sh"
for t in dpkg-deb objdump lintian make; do
	command -v $t >/dev/null || img_skip_all "$t not installed (make image-test installs it)"
done
img_need_plain_build
img_workdir
img_plan 12

deb=$(img_deb)
[ -n "$deb" ] && [ -f "$deb" ]
img_ok $? "make deb builds the package" || img_bail "no .deb; see make deb"
img_diag "$deb"

version=$(sed -n 's/^VERSION *:= *//p' "$IMG_REPO/Makefile")
img_is "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)" "zaris $version" \
	"package zaris, version from the Makefile ($version)"

want='-rwxr-xr-x root/root ./usr/sbin/zarisd
-rwxr-xr-x root/root ./usr/sbin/zaris-supervisor
-rwxr-xr-x root/root ./usr/bin/zarisctl
-rw-r--r-- root/root ./etc/zaris.conf
-rw-r--r-- root/root ./etc/security/limits.d/zaris.conf
-rw-r--r-- root/root ./lib/systemd/system/zaris.service
-rw-r--r-- root/root ./lib/systemd/system/zaris-thp.service
-rw-r--r-- root/root ./usr/lib/sysctl.d/60-zaris.conf
-rw-r--r-- root/root ./usr/share/doc/zaris/copyright
-rw-r--r-- root/root ./usr/share/man/man8/zarisd.8.gz
-rw-r--r-- root/root ./usr/share/man/man8/zaris-supervisor.8.gz
-rw-r--r-- root/root ./usr/share/man/man1/zarisctl.1.gz'
got=$(dpkg-deb -c "$deb" | awk '{print $1, $2, $6}')
missing=$(comm -23 <(sort <<<"$want") <(sort <<<"$got"))
img_is "$missing" "" "binaries, config, unit, sysctl and limits files with their modes"

mkdir -p "$IMG_DIR/x"
dpkg-deb -e "$deb" "$IMG_DIR/x/DEBIAN"
dpkg-deb -x "$deb" "$IMG_DIR/x"
grep -qx /etc/zaris.conf "$IMG_DIR/x/DEBIAN/conffiles"
img_ok $? "/etc/zaris.conf is a conffile"

cmp -s "$IMG_DIR/x/etc/zaris.conf" "$IMG_REPO/config/zaris.conf"
img_ok $? "/etc/zaris.conf is config/zaris.conf"

grep -q 'adduser .*--system' "$IMG_DIR/x/DEBIAN/postinst" &&
	grep -q '/var/lib/zaris' "$IMG_DIR/x/DEBIAN/postinst"
img_ok $? "postinst creates the zaris system user and /var/lib/zaris"

# Each tuning key names a real kernel setting (a typo would be skipped with
# only a warning at boot). Read, never written: the host's values stay.
bad=
while IFS='=' read -r k _; do
	k=$(echo "$k" | tr -d ' ')
	case $k in '' | '#'*) continue ;; esac
	[ -e "/proc/sys/$(echo "$k" | tr . /)" ] || bad+="$k "
done < "$IMG_DIR/x/usr/lib/sysctl.d/60-zaris.conf"
img_is "$bad" "" "every key of /usr/lib/sysctl.d/60-zaris.conf exists in /proc/sys"

rc=0
for s in postinst prerm postrm; do sh -n "$IMG_DIR/x/DEBIAN/$s" || rc=1; done
sh -n "$IMG_REPO/image/provision.sh" || rc=1
img_ok $rc "maintainer scripts and provision.sh parse (sh -n)"

# Every NEEDED soname -> the Debian package that ships it on this (build)
# machine -> must be named in Depends:.
depends=" $(img_deb_depends "$deb" | tr '\n' ' ')"
absent=
for so in $(objdump -p "$IMG_DIR"/x/usr/sbin/* "$IMG_DIR"/x/usr/bin/* | awk '/NEEDED/{print $2}' | sort -u); do
	path=$(ldconfig -p | awk -v so="$so" '$1 == so && /x86-64|64/ {print $NF; exit}')
	# dpkg knows a library under the path its package ships, which on a
	# merged-/usr system may be the /lib or the /usr/lib spelling.
	pkg=
	for p in "$path" "$(readlink -f "$path")" "${path#/usr}" "/usr$path"; do
		pkg=$(dpkg -S "$p" 2>/dev/null | head -1 | cut -d: -f1)
		[ -n "$pkg" ] && break
	done
	[ -n "$pkg" ] || pkg="?($so)"
	case $depends in *" $pkg "*) ;; *) absent+="$so->$pkg " ;; esac
done
img_is "$absent" "" "Depends: covers every linked library ($(dpkg-deb -f "$deb" Depends))"

out=$(lintian "$deb" 2>&1 | grep -E '^[EW]: ')
img_is "$out" "" "lintian: no errors or warnings"

twice() {
	SOURCE_DATE_EPOCH=1700000000 sh "$IMG_REPO/image/build-deb.sh" "$ZARIS_BUILD" "$version" "$IMG_DIR/r1" &&
		SOURCE_DATE_EPOCH=1700000000 sh "$IMG_REPO/image/build-deb.sh" "$ZARIS_BUILD" "$version" "$IMG_DIR/r2"
}
img_locked twice >/dev/null && cmp -s "$IMG_DIR"/r1/*.deb "$IMG_DIR"/r2/*.deb
img_ok $? "two builds from the same inputs are identical"

# A rebuild renames a new file over the old one: a reader of the previous
# .deb (appliance.t's packer upload while this test runs `make deb`) keeps
# reading a whole package. It was rewritten in place: apt in the image then
# read a truncated file ("could not locate member control.tar").
rebuild() {
	exec 7<"$IMG_DIR/r1/zaris_${version}_$(dpkg --print-architecture).deb"
	before=$(stat -L -c %i /dev/fd/7)
	SOURCE_DATE_EPOCH=1700000000 sh "$IMG_REPO/image/build-deb.sh" "$ZARIS_BUILD" "$version" "$IMG_DIR/r1" >/dev/null &&
		after=$(stat -c %i "$IMG_DIR"/r1/*.deb) &&
		[ "$before" != "$after" ] && dpkg-deb -f /dev/fd/7 Package >/dev/null
	rc=$?
	exec 7<&-
	return $rc
}
img_locked rebuild
img_ok $? "a rebuild replaces the .deb by rename; the old one stays whole for its readers"

img_done
