#!/bin/bash
# appliance.t — the image recipe end to end on a booted Debian 12 system.
#
# A cached mmdebstrap root (img_cache) is unpacked privately and booted with
# systemd-nspawn (own network namespace, so its zarisd on 127.0.0.1:6379 is
# not the host's). `packer build -only=null.local packer/` then runs the
# real provisioners over SSH — upload the .deb, image/provision.sh — exactly
# as for Azure. Then, inside the container: the service and its effective
# hardening, redis-cli PING, zarisctl status, the journal, recovery from
# kill -9 of zarisd (supervisor) and from a SIGSTOPped supervisor (systemd's
# watchdog), reload of an edited /etc/zaris.conf (applied; a broken file is
# reported and changes nothing), a reboot, an upgrade to version N+1 that
# keeps the local edit, and a purge that leaves nothing behind.
set -u
source "$(dirname "$0")/lib.sh"
img_need_root_tools systemd-nspawn nsenter mmdebstrap packer socat ssh-keygen python3 make
export CHECKPOINT_DISABLE=1
img_need_plain_build
img_workdir
img_plan 48

# img_wait SECS CMD...: poll CMD until it succeeds; rc 1 on timeout.
img_wait() {
	local end=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.2
	done
}
ping_ok() { [ "$(img_in redis-cli -p 6379 ping 2>/dev/null)" = PONG ]; }
prop() { img_in systemctl show -p "$1" --value "${2:-zaris.service}"; }
active() { [ "$(img_in systemctl is-active zaris.service)" = active ]; }
zarisd_pid() { img_in pgrep -x zarisd | head -1; }
journal() { img_in journalctl --no-pager -o cat -u zaris.service "$@"; }
maxmemory() { img_in redis-cli -p 6379 config get maxmemory | sed -n 2p; }
maxmemory_is() { [ "$(maxmemory)" = "$1" ]; }
nrestarts_is() { [ "$(prop NRestarts)" = "$1" ]; }
zarisd_replaced() { local p; p=$(zarisd_pid); [ -n "$p" ] && [ "$p" != "$1" ]; }
journal_since_has() { journal --since "$1" | grep -q -- "$2"; }

# --- the package and the root ------------------------------------------------
deb=$(img_deb) && [ -f "$deb" ] || img_bail "make deb failed"
tar=$(img_cache "$deb") || img_bail "building the Debian 12 root failed"
root=$(img_root "$tar") || img_bail "unpacking $tar failed"

# Packer's user gets a key made for this run; sshd keeps its default port 22.
ssh-keygen -q -t ed25519 -N '' -C zaris-image-test -f "$IMG_DIR/id" || img_bail "ssh-keygen"
install -d -m 0700 "$root/home/packer/.ssh"
install -m 0600 "$IMG_DIR/id.pub" "$root/home/packer/.ssh/authorized_keys"
chown -R "$(awk -F: '$1 == "packer" {print $3 ":" $4}' "$root/etc/passwd")" "$root/home/packer/.ssh"

img_boot "$root"
img_ok $? "Debian 12 root boots under systemd-nspawn" || img_bail "no container"
img_forward_ssh

# --- provisioning: the same build block as Azure --------------------------------
(cd "$IMG_DIR" && timeout -k 10 900 packer build -color=false -only=null.local \
	-var "ssh_port=$IMG_SSH_PORT" -var "ssh_private_key_file=$IMG_DIR/id" \
	-var "deb=$deb" -var apt_update=false "$IMG_REPO/packer/") >"$IMG_DIR/packer.log" 2>&1
rc=$?
img_ok $rc "packer build -only=null.local provisions the container" ||
	img_diag "$(tail -40 "$IMG_DIR/packer.log")"
grep -q 'provision: done: zaris' "$IMG_DIR/packer.log"
img_ok $? "image/provision.sh ran to the end over SSH"
img_diag "$(grep -E '==> null.local: (Using|Connected|Uploading|Provisioning)|provision:|Setting up zaris|=active|Build .null.local. finished' "$IMG_DIR/packer.log")"
! grep -q waagent "$IMG_DIR/packer.log"
img_ok $? "the Azure-only deprovision step is skipped for null.local"

img_is "$(img_in systemctl is-enabled zaris.service)" enabled "zaris.service is enabled"
img_wait 30 active
img_ok $? "zaris.service is active" || img_diag "$(img_in systemctl status --no-pager zaris.service)"

# etcd-server (recommended) is installed for the supervisors' members, and
# Debian's own stand-alone etcd.service is off: it would hold 2379/2380.
img_in test -x /usr/bin/etcd &&
	[ "$(img_in systemctl is-enabled etcd.service)" = disabled ] &&
	! img_in systemctl is-active --quiet etcd.service
img_ok $? "etcd-server is installed, its stand-alone etcd.service disabled and stopped" ||
	img_diag "$(img_in ls -l /usr/bin/etcd; img_in systemctl status --no-pager etcd.service)"

# The container's /sys is read-only, so zaris-thp.service skips itself
# there. Over a writable stand-in for the THP knobs (bound in the
# container's mount namespace) it does what it does on a VM.
mkdir -p "$root/root/thp"
for f in enabled defrag; do echo 'always [madvise] never' > "$root/root/thp/$f"; done
img_in mount --bind /root/thp /sys/kernel/mm/transparent_hugepage &&
	img_in systemctl restart zaris-thp.service &&
	[ "$(cat "$root/root/thp/enabled" "$root/root/thp/defrag")" = "never"$'\n'"never" ]
img_ok $? "zaris-thp.service turns transparent huge pages off (enabled, defrag: never)" ||
	img_diag "$(cat "$root"/root/thp/*; img_in systemctl status --no-pager zaris-thp.service)"
img_in umount /sys/kernel/mm/transparent_hugepage

# Provisioning twice (a re-run of the build) ends in the same state.
main=$(prop MainPID)
(cd "$IMG_DIR" && timeout -k 10 900 packer build -color=false -only=null.local \
	-var "ssh_port=$IMG_SSH_PORT" -var "ssh_private_key_file=$IMG_DIR/id" \
	-var "deb=$deb" -var apt_update=false "$IMG_REPO/packer/") >"$IMG_DIR/packer2.log" 2>&1
rc=$?
[ $rc -eq 0 ] && active && [ "$(prop MainPID)" = "$main" ]
img_ok $? "a second provisioning run succeeds and leaves the running service alone" ||
	img_diag "packer rc=$rc, MainPID $main -> $(prop MainPID), $(img_in systemctl is-active zaris.service), NRestarts=$(prop NRestarts)
$(tail -20 "$IMG_DIR/packer2.log")
$(journal -n 30)"

out=$(systemd-analyze verify --root="$root" zaris.service zaris-thp.service 2>&1)
img_ok $? "systemd-analyze verify of the installed units" || img_diag "$out"
sed 's|^ExecStart=/usr/sbin/zaris-supervisor|ExecStart=/usr/sbin/zaris-supervisorr|' \
	"$root/lib/systemd/system/zaris.service" > "$root/etc/systemd/system/zaris-typo.service"
out=$(systemd-analyze verify --root="$root" zaris-typo.service 2>&1)
[ $? -ne 0 ] && grep -q 'zaris-supervisorr' <<<"$out"
img_ok $? "... and the same check rejects a unit whose ExecStart is not installed" || img_diag "$out"
rm -f "$root/etc/systemd/system/zaris-typo.service"

# --- what runs, and how confined ------------------------------------------------
img_wait 30 ping_ok
img_ok $? "redis-cli ping answers PONG on the default 127.0.0.1:6379"

main=$(prop MainPID)
zpid=$(zarisd_pid)
img_is "$(img_in ps -o user= -p "$main") $(img_in ps -o user= -p "${zpid:-1}")" "zaris zaris" \
	"supervisor and zarisd run as the zaris user"
img_is "$(prop Type) $(prop WatchdogUSec) $(prop LimitNOFILE) $(prop NoNewPrivileges) $(prop ProtectSystem)" \
	"notify 10s 65536 yes strict" "Type, WatchdogSec, LimitNOFILE, NoNewPrivileges, ProtectSystem in effect"
img_is "$(img_in awk '/^CapEff|^Seccomp:/ {print $2}' "/proc/$zpid/status" | tr '\n' ' ')" "0000000000000000 2 " \
	"zarisd has no capabilities and a seccomp filter"
img_like "$(img_in redis-cli -p 6379 info server)" 'multiplexing_api:io_uring' \
	"io_uring passes the system call filter (INFO multiplexing_api)"
score=$(img_in systemd-analyze security zaris.service 2>/dev/null | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
img_diag "systemd-analyze security zaris.service inside: $score"
awk -v s="$score" 'BEGIN { exit !(s != "" && s + 0 <= 2.0) }'
img_ok $? "exposure score of the running unit ($score) <= 2.0"
img_ok "$(img_in test -S /run/zaris/supervisor.sock; echo $?)" "control socket /run/zaris/supervisor.sock exists"

out=$(img_in zarisctl status 2>&1)
img_ok $? "zarisctl status" || img_diag "$out"
img_like "$out" 'local.*up' "zarisctl status lists the node 'local' as up" || true
img_diag "$out"

out=$(img_in journalctl --no-pager -o cat _SYSTEMD_UNIT=zaris.service _COMM=zaris-superviso)
img_like "$out" 'local' "the journal has the supervisor's lines (about node 'local')"
img_diag "$(head -5 <<<"$out")"

# --- recovery ---------------------------------------------------------------------
img_in kill -KILL "$zpid"
img_wait 30 zarisd_replaced "$zpid"
img_ok $? "kill -9 of zarisd: the supervisor starts a new one"
img_wait 30 ping_ok
img_ok $? "... which answers PING"
img_is "$(prop MainPID) $(prop NRestarts)" "$main 0" "... without systemd restarting the service"

img_in kill -STOP "$main"
img_wait 40 nrestarts_is 1
img_ok $? "a SIGSTOPped supervisor is restarted by the watchdog (NRestarts=1)"
img_wait 30 active && img_wait 30 ping_ok
img_ok $? "... and the service is active and answers PING again"
[ "$(prop MainPID)" != "$main" ]
img_ok $? "... with a new supervisor"
img_like "$(journal)" 'Watchdog timeout' "the journal records the watchdog timeout"

# --- reload -----------------------------------------------------------------------------
main=$(prop MainPID)
zpid=$(zarisd_pid)
old_mm=$(maxmemory)
# The operator's edit: node 'local' (the only one listening on port 6379)
# gets a memory limit, on the line of its port.
img_in sed -i 's|^\([[:space:]]*port = 6379;\)|\1 maxmemory = "64mb";|' /etc/zaris.conf
img_like "$(img_in cat /etc/zaris.conf)" 'port = 6379; maxmemory = "64mb";' "edited /etc/zaris.conf (maxmemory 64mb)" || true
img_in systemctl reload zaris.service
img_wait 20 maxmemory_is 67108864
img_ok $? "systemctl reload zaris applies it (CONFIG GET maxmemory: $old_mm -> $(maxmemory))"
img_is "$(prop MainPID) $(zarisd_pid)" "$main $zpid" "... live, nothing restarted"

cp "$root/etc/zaris.conf" "$IMG_DIR/zaris.conf.good"
printf 'nodes = ( { name = "broken"; port = ; } );\n' >> "$root/etc/zaris.conf"
bad_line=$(wc -l < "$root/etc/zaris.conf")
since=$(img_in date '+%Y-%m-%d %H:%M:%S')
img_in systemctl reload zaris.service
img_wait 20 journal_since_has "$since" "zaris.conf:$bad_line"
img_ok $? "a broken file: the journal names /etc/zaris.conf:$bad_line" || img_diag "$(journal --since "$since")"
out=$(img_in systemctl status --no-pager -n 3 zaris.service)
img_like "$out" "zaris.conf:$bad_line" "... and systemctl status zaris shows it" || true
img_diag "$out"
active && ping_ok && [ "$(prop MainPID) $(zarisd_pid)" = "$main $zpid" ] && [ "$(maxmemory)" = 67108864 ]
img_ok $? "... while nothing was stopped or changed"
cp "$IMG_DIR/zaris.conf.good" "$root/etc/zaris.conf"
img_in systemctl reload zaris.service

# --- reboot --------------------------------------------------------------------
img_in systemctl reboot
img_wait_exit 60
img_is "$IMG_EXIT" 133 "systemctl reboot ends the container with nspawn's reboot status" ||
	{ img_stop; }
# What systemd-nspawn@.service does on 133: start it again.
img_boot "$root" && img_wait 30 active && img_wait 30 ping_ok
img_ok $? "after the reboot zaris.service is active and answers PING"
img_is "$(maxmemory)" 67108864 "... with the edited configuration"
t_thp=$(prop ConditionTimestampMonotonic zaris-thp.service)
t_zaris=$(prop ExecMainStartTimestampMonotonic)
[ "${t_thp:-0}" -gt 0 ] && [ "$t_thp" -le "${t_zaris:-0}" ]
img_ok $? "... and zaris-thp.service ran at boot before zaris.service" ||
	img_diag "zaris-thp condition at $t_thp, zaris started at $t_zaris"

# --- upgrade N -> N+1 keeps the operator's edit ---------------------------------------
version=$(dpkg-deb -f "$deb" Version)
next=$version+test1
{ cat "$IMG_REPO/config/zaris.conf"; echo "# packaged default of $next"; } > "$IMG_DIR/zaris.conf.next"
deb2=$(img_locked sh "$IMG_REPO/image/build-deb.sh" "$ZARIS_BUILD" "$next" "$IMG_DIR/next" "$IMG_DIR/zaris.conf.next" 2>&1)
if [ -f "$deb2" ] && dpkg --compare-versions "$next" gt "$version"; then :; else img_diag "build of $next: $deb2"; fi
cp "$deb2" "$root/root/zaris-next.deb" 2>/dev/null
main=$(prop MainPID)
out=$(img_in env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold /root/zaris-next.deb 2>&1)
img_ok $? "upgrade to $next with apt-get" || img_diag "$out"
img_is "$(img_in dpkg-query -W -f='${Version}' zaris)" "$next" "... is installed"
grep -q 'maxmemory = "64mb";' "$root/etc/zaris.conf" && ! grep -q "packaged default of $next" "$root/etc/zaris.conf"
img_ok $? "... the locally edited /etc/zaris.conf is kept"
grep -q "packaged default of $next" "$root/etc/zaris.conf.dpkg-dist" 2>/dev/null
img_ok $? "... the new default lands in /etc/zaris.conf.dpkg-dist"
img_wait 30 active && img_wait 30 ping_ok && [ "$(prop MainPID)" != "$main" ] && [ "$(maxmemory)" = 67108864 ]
img_ok $? "... the service was restarted on the new version and runs the edited config"

# A setting zarisd cannot take live: the supervisor restarts that instance.
zpid=$(zarisd_pid)
img_in sed -i 's|port = 6379;|port = 6380;|' /etc/zaris.conf
img_in systemctl reload zaris.service
pong6380() { [ "$(img_in redis-cli -p 6380 ping 2>/dev/null)" = PONG ]; }
img_wait 30 pong6380 && ! ping_ok && zarisd_replaced "$zpid"
img_ok $? "reload with port 6379 -> 6380 restarts the instance on the new port" ||
	img_diag "$(img_in zarisctl status 2>&1)"

# --- purge ---------------------------------------------------------------------------------
out=$(img_in env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q zaris 2>&1)
img_ok $? "apt-get purge zaris" || img_diag "$out"
[ -z "$(img_in pgrep -x zarisd)$(img_in pgrep -x zaris-superviso)" ] && ! ping_ok && ! pong6380 &&
	[ "$(img_in systemctl is-active zaris.service)" != active ]
img_ok $? "... stops the service and every zarisd"
left=$(img_in find / -xdev \( -path /proc -o -path /sys -o -path /root \) -prune -o -name '*zaris*' -print 2>/dev/null)
img_is "$left" "" "... and leaves no file named *zaris* behind"
img_in getent passwd zaris >/dev/null
img_ok $? "... the zaris system user stays (Debian policy)"

img_done
