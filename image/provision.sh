#!/bin/sh
# provision.sh — turn a booted Debian 12 system into the Zaris appliance.
#
# The one provisioning script: Packer runs it on the Azure build VM (and on
# the local null source), the tests run it through that same Packer build
# inside a booted systemd-nspawn container. Run as root:
#
#   ZARIS_DEB=/tmp/zaris.deb sh provision.sh
#
#   ZARIS_DEB         the package to install (required)
#   ZARIS_APT_UPDATE  1 (default): refresh the package lists first; 0 for a
#                     root whose lists and archives are already in place
#                     (the offline test root)
#
# Steps: install the .deb with apt (so its Depends: resolve from the archive),
# apply the kernel tuning now (the package's sysctl.d file applies it at every
# boot), enable and start zaris.service and check it came up, clean up what a
# published image should not carry. Idempotent: a second run re-installs and
# ends in the same state.
set -eu

deb=${ZARIS_DEB:?ZARIS_DEB must name the zaris .deb}
say() { echo "provision: $*"; }

[ "$(id -u)" = 0 ] || { say "must run as root"; exit 1; }
[ -f "$deb" ] || { say "$deb not found"; exit 1; }

export DEBIAN_FRONTEND=noninteractive
# An operator's edited /etc/zaris.conf survives a re-provision; the
# package's new default then lands next to it as zaris.conf.dpkg-dist.
apt_opts="-y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold"

if [ "${ZARIS_APT_UPDATE:-1}" = 1 ]; then
	say "apt-get update"
	apt-get update -q
fi

say "installing $deb"
# apt wants a path, not a bare name, to treat the argument as a file.
case $deb in /*|./*) ;; *) deb=./$deb ;; esac
# Recommends on: the package recommends redis-tools, so redis-cli is on
# the appliance whatever the base image's apt defaults are.
# shellcheck disable=SC2086 # apt_opts is a list of words
apt-get install $apt_opts -o APT::Install-Recommends=true "$deb"

# Debian's etcd-server (recommended, for failover) enables etcd.service, a
# single-member etcd of its own on 2379/2380: the ports a supervisor's
# member takes when the cluster file says etcd = "run". It serves nobody
# here, so it is stopped and disabled (an operator may enable it again).
if systemctl cat etcd.service >/dev/null 2>&1; then
	say "disabling Debian's stand-alone etcd.service (the supervisors run their own members)"
	systemctl disable etcd.service
	if [ -d /run/systemd/system ]; then
		systemctl stop etcd.service
	fi
fi

say "kernel tuning"
if sysctl -q --system >/dev/null 2>&1; then
	say "sysctl applied: $(sysctl -n vm.overcommit_memory net.core.somaxconn | tr '\n' ' ')"
else
	# Containers have a read-only /proc/sys: the host's values apply there,
	# and a VM applies /usr/lib/sysctl.d/60-zaris.conf at every boot anyway.
	say "sysctl not writable here; /usr/lib/sysctl.d/60-zaris.conf applies at boot"
fi

say "enabling zaris.service"
systemctl enable zaris.service
if [ -d /run/systemd/system ]; then
	systemctl start zaris.service
	tries=0
	until systemctl is-active --quiet zaris.service; do
		tries=$((tries + 1))
		if [ "$tries" -ge 30 ]; then
			systemctl status --no-pager zaris.service || true
			journalctl --no-pager -n 50 -u zaris.service || true
			say "zaris.service did not become active"
			exit 1
		fi
		sleep 1
	done
	systemctl show zaris.service -p ActiveState -p StatusText -p WatchdogUSec -p MainPID
fi

say "cleaning up"
apt-get clean
rm -f "$deb"
say "done: $(dpkg-query -W -f='${Package} ${Version}' zaris)"
