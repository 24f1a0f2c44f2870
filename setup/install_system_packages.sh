#!/usr/bin/env bash
# Installs the Debian packages in setup/apt-packages.txt that are missing (needs root and apt-get).
#   setup/install_system_packages.sh           every package in the list
#   setup/install_system_packages.sh PKG ...   only these (each must be in the list)
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t listed < <(grep -vE '^\s*(#|$)' setup/apt-packages.txt | awk '{print $1}' | sort -u)
if [ $# -gt 0 ]; then
  for p in "$@"; do
    printf '%s\n' "${listed[@]}" | grep -qxF -- "$p" || { echo "setup: $p is not in setup/apt-packages.txt" >&2; exit 2; }
  done
  pkgs=("$@")
else
  pkgs=("${listed[@]}")
fi
[ "${#pkgs[@]}" -eq 0 ] && exit 0
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
[ "${#missing[@]}" -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "setup: missing Debian packages (${missing[*]}); install them as root: apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
