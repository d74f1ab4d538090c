#!/usr/bin/env bash
# Installs the Debian packages longmix needs, only those missing (idempotent).
set -euo pipefail
pkgs=(cmake ninja-build g++ pkg-config libfftw3-dev libopenblas-dev libcli11-dev
      nlohmann-json3-dev libgtest-dev gnuplot-nox fonts-dejavu-core git clang libclang-rt-14-dev
      libomp-dev xxd)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "longmix: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
