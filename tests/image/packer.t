#!/bin/bash
# packer.t — packer/ validates offline with Debian's Packer 1.6.6, keeps its
# canonical format, and the same check rejects a misspelt key and a missing
# required one (so the first check can fail).
set -u
source "$(dirname "$0")/lib.sh"
command -v packer >/dev/null || img_skip_all "packer not installed (make image-test installs it)"
export CHECKPOINT_DISABLE=1
img_workdir
img_plan 7

out=$(packer validate "$IMG_REPO/packer/" 2>&1)
img_ok $? "packer validate packer/" || img_diag "$out"

out=$(packer fmt -check "$IMG_REPO/packer/" 2>&1)
img_ok $? "packer fmt -check packer/ (canonical layout)" || img_diag "$out"

! grep -Eq '^[^#]*required_plugins' "$IMG_REPO"/packer/*.pkr.hcl
img_ok $? "no required_plugins block (Packer 1.6.6 rejects it)"

# The template's default version picks build/zaris_<version>_amd64.deb.
mk=$(sed -n 's/^VERSION *:= *//p' "$IMG_REPO/Makefile")
tpl=$(awk '/^variable "version"/ {v = 1} v && /default/ {gsub(/[" ]/, "", $3); print $3; exit}' "$IMG_REPO/packer/zaris.pkr.hcl")
img_is "$tpl" "$mk" "the template's default version is the Makefile's VERSION"

# A copy next to a link to image/, so ${path.root}/../image resolves.
mkdir -p "$IMG_DIR/packer"
ln -s "$IMG_REPO/image" "$IMG_DIR/image"
bad() { # SED_EXPR: validate a modified copy; prints output, returns rc
	sed "$1" "$IMG_REPO/packer/zaris.pkr.hcl" > "$IMG_DIR/packer/zaris.pkr.hcl"
	packer validate "$IMG_DIR/packer/" 2>&1
}
out=$(bad 's/^  vm_size  /  vm_sizee /')
rc=$?
grep -q 'vm_sizee' "$IMG_DIR/packer/zaris.pkr.hcl" || img_bail "sed did not misspell vm_size"
[ $rc -ne 0 ] && grep -q 'vm_sizee' <<<"$out"
img_ok $? "a misspelt key (vm_sizee) fails validation" || img_diag "rc=$rc $out"

out=$(bad '/^  os_type /d')
rc=$?
[ $rc -ne 0 ] && grep -qi 'os_type' <<<"$out"
img_ok $? "a missing required key (os_type) fails validation" || img_diag "rc=$rc $out"

out=$(bad 's|/../image/provision.sh|/../image/provision-missing.sh|')
rc=$?
[ $rc -ne 0 ]
img_ok $? "a missing provisioning script fails validation" || img_diag "rc=$rc $out"

img_done
