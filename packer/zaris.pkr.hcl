# zaris.pkr.hcl — the Zaris appliance image: Debian 12 (gen2) from the Azure
# marketplace + the zaris .deb + image/provision.sh, generalized for reuse.
#
# One build block, two sources:
#   azure-arm.debian12  the real image (needs ARM_* credentials, see
#                       image/README-image.md)
#   null.local          any booted Debian 12 system reachable over SSH; the
#                       tests use a systemd-nspawn container, so the very
#                       provisioners below run on every CI run.
# Written for Packer 1.6.6 (Debian 12's packer): builders are built in, so
# there is no `packer { required_plugins }` block (1.6.6 rejects it).
# Paths are relative to this directory (path.root), so any working directory does.

variable "client_id" {
  type    = string
  default = env("ARM_CLIENT_ID")
}
variable "client_secret" {
  type      = string
  default   = env("ARM_CLIENT_SECRET")
  sensitive = true
}
variable "subscription_id" {
  type    = string
  default = env("ARM_SUBSCRIPTION_ID")
}
variable "tenant_id" {
  type    = string
  default = env("ARM_TENANT_ID")
}
variable "resource_group" {
  type        = string
  default     = "zaris-images"
  description = "Resource group that receives the managed image (must exist)."
}
variable "location" {
  type    = string
  default = "westeurope"
}
variable "vm_size" {
  type    = string
  default = "Standard_D2s_v3"
}
variable "image_name" {
  type        = string
  default     = ""
  description = "Managed image name; empty means zaris-<version>-<timestamp>."
}
variable "version" {
  type        = string
  default     = "0.1.0"
  description = "Package version (the Makefile's VERSION); picks the .deb."
}
variable "deb" {
  type        = string
  default     = ""
  description = "Path of the zaris .deb; empty means <repo>/build/zaris_<version>_amd64.deb."
}
variable "apt_update" {
  type        = bool
  default     = true
  description = "Run apt-get update before installing; off only for offline test roots."
}

# Local target (tests): sshd of a booted Debian 12 system, user with sudo.
variable "ssh_host" {
  type    = string
  default = "127.0.0.1"
}
variable "ssh_port" {
  type    = number
  default = 22
}
variable "ssh_username" {
  type    = string
  default = "packer"
}
variable "ssh_private_key_file" {
  type        = string
  default     = ""
  description = "Key for ssh_username; empty means use the ssh agent."
}

locals {
  deb        = var.deb != "" ? var.deb : "${path.root}/../build/zaris_${var.version}_amd64.deb"
  image_name = var.image_name != "" ? var.image_name : "zaris-${var.version}-${formatdate("YYYYMMDDhhmmss", timestamp())}"
}

source "azure-arm" "debian12" {
  client_id       = var.client_id
  client_secret   = var.client_secret
  subscription_id = var.subscription_id
  tenant_id       = var.tenant_id

  os_type         = "Linux"
  image_publisher = "Debian"
  image_offer     = "debian-12"
  image_sku       = "12-gen2"
  location        = var.location
  vm_size         = var.vm_size

  managed_image_resource_group_name = var.resource_group
  managed_image_name                = local.image_name

  azure_tags = {
    product = "zaris"
    version = var.version
  }
}

source "null" "local" {
  communicator         = "ssh"
  ssh_host             = var.ssh_host
  ssh_port             = var.ssh_port
  ssh_username         = var.ssh_username
  ssh_private_key_file = var.ssh_private_key_file
  ssh_agent_auth       = var.ssh_private_key_file == ""
  ssh_timeout          = "2m"
}

build {
  sources = ["source.azure-arm.debian12", "source.null.local"]

  # generated: the .deb need not exist when the template is validated.
  provisioner "file" {
    source      = local.deb
    destination = "/tmp/zaris.deb"
    generated   = true
  }

  # The one provisioning script, also run by tests/image/ (see its header).
  provisioner "shell" {
    script           = "${path.root}/../image/provision.sh"
    environment_vars = ["ZARIS_DEB=/tmp/zaris.deb", "ZARIS_APT_UPDATE=${var.apt_update ? "1" : "0"}"]
    execute_command  = "chmod +x {{ .Path }}; {{ .Vars }} sudo -E sh '{{ .Path }}'"
  }

  # Azure only, and last: generalize. The build VM's journal and machine-id
  # must not reach every VM made from the image (an empty machine-id is
  # filled in at first boot); waagent removes the build user, SSH host keys
  # and the agent's state.
  provisioner "shell" {
    only            = ["azure-arm.debian12"]
    execute_command = "chmod +x {{ .Path }}; {{ .Vars }} sudo -E sh '{{ .Path }}'"
    inline = [
      "journalctl --rotate && journalctl --vacuum-time=1s",
      "truncate -s 0 /etc/machine-id",
      "/usr/sbin/waagent -force -deprovision+user && export HISTSIZE=0 && sync",
    ]
    inline_shebang = "/bin/sh -ex"
  }
}
