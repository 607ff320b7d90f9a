#!/usr/bin/env bash
# Installs the Debian packages comet-runtime needs to build, test and
# benchmark. Idempotent: installs only what is missing. Source it or run it.
set -euo pipefail

COMET_PACKAGES=(
  # build
  build-essential cmake ninja-build pkg-config clang clang-format
  libseccomp-dev libcap-dev nlohmann-json3-dev libyaml-dev libyaml-cpp-dev libmount-dev
  libnftables-dev libcli11-dev libgtest-dev libssl-dev libbpf-dev libelf-dev zlib1g-dev
  # the Debian package (docs/install.md): cpack's Depends come from dpkg-shlibdeps
  # (dpkg-dev), which cpack runs on the files that file(1) says are ELF
  dpkg-dev file
  # run and test
  busybox-static python3 python3-pytest python3-pytest-xdist python3-h2 iproute2 nftables util-linux procps
  # egress (docs/egress.md): user-mode network for containers (slirp4netns; pasta when
  # COMET_NET_HELPER=pasta); the egress tests' DNS server
  slirp4netns passt dnsmasq-base
  # the wire judge's suites: real HTTP/2 and TLS clients (curl with nghttp2), an h2c server
  curl openssl
  # rootless (docs/rootless.md): newuidmap/newgidmap; bwrap for bench/sandbox.sh
  uidmap bubblewrap
  # reference runtimes for the benchmarks and the engine suites
  runc crun time
  # the engine suites (integration/engines): podman, containerd and a CRI client
  podman containerd python3-grpcio protobuf-compiler python3-grpc-tools python3-yaml
  # podman's --init and its rootless pause process (Recommends, not Depends)
  catatonit
)

missing=()
for p in "${COMET_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "comet: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
