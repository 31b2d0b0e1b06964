# lib.sh — shared helpers for tests/image/*.t (bash; sourced, not run).
#
# TAP output (img_plan/img_ok/img_is/img_diag), the package under test
# (img_deb), the cached Debian 12 root (img_cache), and a booted container
# (img_boot/img_in/img_stop) with a private network, reachable from the host
# over SSH through a forwarded loopback port (img_forward_ssh).
#
# Every test owns a directory under ${TMPDIR:-/tmp} and a unique container
# name; img_cleanup (an EXIT trap) stops what the test started — by PID,
# SIGTERM first, SIGKILL after a timeout — and deletes the directory.
# Facts this relies on are recorded in ../shared/OPS-TESTING.md: nspawn -b
# needs --register=no --keep-unit here (no systemd on the host), and a
# container is driven with nsenter into its PID 1's namespaces.

IMG_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ZARIS_BUILD=${ZARIS_BUILD:-$IMG_REPO/build}
IMG_CACHE_DIR=$ZARIS_BUILD/image-cache
IMG_SUITE=bookworm
# What the booted test root needs besides minbase: systemd as init, sshd and
# sudo for Packer's communicator, redis-cli to talk to zarisd.
IMG_INCLUDE="systemd,systemd-sysv,dbus,iproute2,procps,openssh-server,sudo,redis-tools,ca-certificates"
# Bump when the recipe in img_cache changes in a way the key does not see.
IMG_RECIPE=4

IMG_N=0
IMG_FAILED=0
IMG_DIR=
IMG_PIDS=()

img_plan() { echo "1..$1"; }
img_skip_all() { echo "1..0 # SKIP $*"; exit 0; }
# img_diag TEXT: on stderr (as Test::More's diag), so that CI's plain prove
# log shows why a check failed.
img_diag() { local l; while IFS= read -r l; do echo "# $l" >&2; done <<<"$*"; }
# img_bail REASON: fail this file and stop it (not TAP's "Bail out!", which
# would stop every other test of the prove run too).
img_bail() { img_ok 1 "$*" || true; exit 1; }

# img_ok RC NAME: pass when RC is 0.
img_ok() {
	IMG_N=$((IMG_N + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $IMG_N - $2"
	else
		echo "not ok $IMG_N - $2"
		IMG_FAILED=$((IMG_FAILED + 1))
	fi
	return "$1"
}

# img_is GOT WANT NAME
img_is() {
	if [ "$1" = "$2" ]; then
		img_ok 0 "$3"
	else
		img_ok 1 "$3" || true
		img_diag "got:  '$1'"$'\n'"want: '$2'"
		return 1
	fi
}

# img_like GOT REGEX NAME (grep -E on the whole text)
img_like() {
	if grep -Eq -- "$2" <<<"$1"; then
		img_ok 0 "$3"
	else
		img_ok 1 "$3" || true
		img_diag "no match for /$2/ in:"$'\n'"$1"
		return 1
	fi
}

img_done() { [ "$IMG_FAILED" -eq 0 ]; }

# img_need_root_tools TOOL...: skip the whole file where the machine cannot
# run it (not root, tools absent: `make image-test` installs them).
img_need_root_tools() {
	[ "$(id -u)" = 0 ] || img_skip_all "needs root (systemd-nspawn, mmdebstrap)"
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || img_skip_all "$t not installed (make image-test installs it)"
	done
}

# img_need_plain_build: the package ships the plain build. Under `make asan`
# / `make tsan` ZARIS_BUILD holds sanitizer binaries, which are not what the
# image carries (and `make test` runs these tests on the plain build).
img_need_plain_build() {
	local z=$ZARIS_BUILD/zarisd
	if [ -x "$z" ] && objdump -p "$z" 2>/dev/null | grep -Eq 'NEEDED +lib[at]san'; then
		img_skip_all "$ZARIS_BUILD is a sanitizer build; the image tests run on the plain build"
	fi
}

# img_workdir: the test's private directory, removed by img_cleanup.
img_workdir() {
	IMG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/zaris-img.XXXXXX")
	chmod 755 "$IMG_DIR"
	trap img_cleanup EXIT
	trap 'exit 1' INT TERM
}

# img_kill PID [TIMEOUT_S]: SIGTERM, wait, then SIGKILL. Only our own PIDs.
img_kill() {
	local pid=$1 t=${2:-10} i
	kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < t * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	sleep 0.2
}

img_cleanup() {
	local rc=$? p
	[ -n "${IMG_NSPAWN:-}" ] && img_stop
	for p in "${IMG_PIDS[@]}"; do img_kill "$p" 3; done
	if [ -n "$IMG_DIR" ] && [ -d "$IMG_DIR" ]; then
		# Never follow a mount left behind into the host (defensive: the
		# container's mounts live in its own namespace and die with it).
		if grep -q " $IMG_DIR/" /proc/self/mounts; then
			echo "# leaving $IMG_DIR: still has mounts" >&2
		else
			rm -rf --one-file-system "$IMG_DIR"
		fi
	fi
	exit "$rc"
}

# img_deb: build the package from the current tree (under a lock: the image
# tests may run in parallel) and print its path.
img_deb() {
	mkdir -p "$ZARIS_BUILD"
	(
		flock 9
		log=$(make -s --no-print-directory -C "$IMG_REPO" BUILD="$ZARIS_BUILD" deb 2>&1) ||
			{ echo "$log" >&2; exit 1; }
	) 9>"$ZARIS_BUILD/.deb.lock" || return 1
	echo "$ZARIS_BUILD/zaris_$(sed -n 's/^VERSION *:= *//p' "$IMG_REPO/Makefile")_$(dpkg --print-architecture).deb"
}

# img_locked CMD...: run CMD holding the lock img_deb builds under, so it
# never reads the binaries while a parallel test's make rewrites them.
img_locked() {
	mkdir -p "$ZARIS_BUILD"
	(
		flock 9
		"$@"
	) 9>"$ZARIS_BUILD/.deb.lock"
}

img_deb_depends() { # DEB [FIELD]: the package names its Depends: (or FIELD) lists, one a line
	dpkg-deb -f "$1" "${2:-Depends}" | tr ',|' '\n\n' | sed 's/(.*)//; s/ //g' | sed '/^$/d' | sort -u
}

# img_cache DEB: print the path of a tarball of a Debian 12 root for DEB,
# building it once. Besides IMG_INCLUDE the root holds DEB's dependencies in
# apt's archive cache, not installed, with the package lists: apt-get in the
# root (which has no network) then resolves and installs them the way it
# does from a mirror. DEB's Recommends too (etcd-server), and everything
# with its Recommends, as provision.sh installs
# (libcurl4's pull in libldap-common, libsasl2-modules, publicsuffix).
# Keyed by everything that goes into it.
img_cache() {
	local deps key tar mirror
	deps=$({ img_deb_depends "$1"; img_deb_depends "$1" Recommends; } | sort -u | tr '\n' ' ')
	key=$(printf '%s\n' "$IMG_RECIPE" "$IMG_SUITE" "$IMG_INCLUDE" "$deps" | sha256sum | cut -c1-16)
	tar=$IMG_CACHE_DIR/rootfs-$key.tar
	mkdir -p "$IMG_CACHE_DIR"
	(
		flock 9
		[ -s "$tar" ] && exit 0
		# The mirror is read at run time and never written into a file.
		mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
		[ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list)
		echo "# building $tar (once; about a minute)" >&2
		rm -rf "$IMG_CACHE_DIR"/rootfs-*.tar "$IMG_CACHE_DIR"/rootfs-*.tar.part
		timeout -k 10 1800 mmdebstrap --quiet --format=tar --variant=minbase --include="$IMG_INCLUDE" \
			--skip=cleanup/apt \
			--customize-hook='echo zaris-img > "$1/etc/hostname"' \
			--customize-hook='printf "127.0.0.1 localhost\n127.0.1.1 zaris-img\n" > "$1/etc/hosts"' \
			--customize-hook='chroot "$1" useradd --create-home --shell /bin/bash packer' \
			--customize-hook='echo "packer ALL=(ALL) NOPASSWD:ALL" > "$1/etc/sudoers.d/packer"' \
			--customize-hook='chmod 0440 "$1/etc/sudoers.d/packer"' \
			--customize-hook="chroot \"\$1\" apt-get install -y -q --download-only -o APT::Install-Recommends=true $deps" \
			"$IMG_SUITE" "$tar.part" "$mirror" >"$IMG_CACHE_DIR/mmdebstrap.log" 2>&1 ||
			{ tail -30 "$IMG_CACHE_DIR/mmdebstrap.log" >&2; exit 1; }
		mv "$tar.part" "$tar"
	) 9>"$IMG_CACHE_DIR/.lock" || return 1
	echo "$tar"
}

# img_root TAR: unpack a private copy of the cached root; prints its path.
img_root() {
	local root=$IMG_DIR/root
	mkdir -p "$root"
	# Shared lock: a rebuild of the cache (exclusive) waits for unpacking.
	(
		flock -s 9
		tar -C "$root" --numeric-owner -xpf "$1"
	) 9>"$IMG_CACHE_DIR/.lock" || return 1
	echo "$root"
}

img_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# img_boot ROOT: boot ROOT with its own network namespace (zarisd's 6379 is
# the container's, not the host's). Sets IMG_NSPAWN (nspawn's PID) and
# IMG_LEADER (the container's PID 1); waits until systemd has finished
# booting. Console output goes to $IMG_DIR/nspawn.log.
img_boot() {
	IMG_MACHINE=${IMG_MACHINE:-zimg-$$-$RANDOM}
	IMG_ROOT=$1
	systemd-nspawn -q -D "$IMG_ROOT" -M "$IMG_MACHINE" -b --register=no --keep-unit \
		--private-network --console=passive >>"$IMG_DIR/nspawn.log" 2>&1 &
	IMG_NSPAWN=$!
	img_wait_booted
}

# img_wait_booted: find the container's (new) PID 1 and wait until it is up.
img_wait_booted() {
	local i s old=${IMG_LEADER:-}
	IMG_LEADER=
	for ((i = 0; i < 300; i++)); do
		IMG_LEADER=$(pgrep -P "$IMG_NSPAWN" -x systemd | head -1)
		[ -n "$IMG_LEADER" ] && [ "$IMG_LEADER" != "$old" ] && break
		IMG_LEADER=
		kill -0 "$IMG_NSPAWN" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$IMG_LEADER" ] || { img_diag "container did not start:"$'\n'"$(tail -20 "$IMG_DIR/nspawn.log")"; return 1; }
	for ((i = 0; i < 600; i++)); do
		s=$(img_in systemctl is-system-running 2>/dev/null)
		case $s in running | degraded) return 0 ;; esac
		sleep 0.1
	done
	img_diag "container not booted (state '$s')"
	return 1
}

# img_in CMD...: run CMD inside the container (all its namespaces).
# Bounded, so a wedged command inside cannot hang the suite.
img_in() { timeout -k 5 "${IMG_IN_TIMEOUT:-120}" nsenter -t "$IMG_LEADER" -a "$@"; }

# img_stop: power the container off (SIGTERM to nspawn); SIGKILL to its
# PID 1 — which takes the whole PID namespace with it — after a timeout.
img_stop() {
	local i
	[ -n "${IMG_NSPAWN:-}" ] || return 0
	kill -TERM "$IMG_NSPAWN" 2>/dev/null
	for ((i = 0; i < 200; i++)); do
		kill -0 "$IMG_NSPAWN" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$IMG_NSPAWN" 2>/dev/null; then
		echo "# container did not stop in 20 s; SIGKILL" >&2
		[ -n "${IMG_LEADER:-}" ] && kill -KILL "$IMG_LEADER" 2>/dev/null
		sleep 0.5
		kill -KILL "$IMG_NSPAWN" 2>/dev/null
	fi
	wait "$IMG_NSPAWN" 2>/dev/null
	IMG_NSPAWN=
}

# img_wait_exit SECS: wait for nspawn to exit by itself (the container
# powered off or rebooted); sets IMG_EXIT to its exit status, rc 1 on
# timeout. Not in $(...): `wait` works on the shell's own children only.
img_wait_exit() {
	local i
	IMG_EXIT=
	for ((i = 0; i < $1 * 10; i++)); do
		if ! kill -0 "$IMG_NSPAWN" 2>/dev/null; then
			wait "$IMG_NSPAWN"
			IMG_EXIT=$?
			IMG_NSPAWN=
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# img_forward_ssh: a host loopback port, IMG_SSH_PORT, that reaches the
# container's sshd (port 22 in its private network). Not in $(...): it
# records socat's PID for img_cleanup.
img_forward_ssh() {
	local port i
	port=$(img_free_port)
	socat TCP-LISTEN:"$port",bind=127.0.0.1,reuseaddr,fork \
		EXEC:"nsenter -t $IMG_LEADER -n socat STDIO TCP\:127.0.0.1\:22" \
		2>>"$IMG_DIR/socat.log" &
	IMG_PIDS+=($!)
	for ((i = 0; i < 50; i++)); do
		(exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break
		sleep 0.1
	done
	IMG_SSH_PORT=$port
}
