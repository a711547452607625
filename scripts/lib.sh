# Shared steps of run-demo.sh and run-tests.sh: install Debian packages, bootstrap
# autotools, configure and build out of tree.
set -euo pipefail

MORPH_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MORPH_JOBS=$(nproc 2>/dev/null || echo 2)

# Everything Morph builds against or tests with, from Debian 12.
MORPH_PACKAGES=(
  build-essential autoconf automake libtool pkg-config git ca-certificates
  libeigen3-dev libceres-dev libgoogle-glog-dev nlohmann-json3-dev libfmt-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev bats jq mandoc
  libslurm-dev slurm-wlm slurmctld slurmd munge libmunge-dev
  libopenmpi-dev openmpi-bin libpmix-dev libhwloc-dev libsqlite3-dev iproute2 bc util-linux
  libxxhash-dev clang procps
  python3 python3-dev pybind11-dev python3-numpy python3-torch
)

# With the wall time and the seconds since the script started: CI's log shows where its time goes.
morph_log() { printf '\n==> [%s, %d s] %s\n' "$(date +%T)" "$SECONDS" "$*"; }

morph_install_deps() {
  local missing=()
  for pkg in "${MORPH_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    morph_log "Debian packages: all present"
    return
  fi
  morph_log "Debian packages: installing ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "run as root (or install sudo) to install packages" >&2; exit 1; }
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

morph_bootstrap() {
  if [ ! -x "$MORPH_TOP/configure" ] || [ "$MORPH_TOP/configure.ac" -nt "$MORPH_TOP/configure" ]; then
    morph_log "autoreconf"
    (cd "$MORPH_TOP" && autoreconf -fi)
  fi
}

# morph_build DIR [configure arguments...]
morph_build() {
  local dir=$1
  shift
  mkdir -p "$dir"
  morph_log "configure $* (in $dir)"
  (cd "$dir" && "$MORPH_TOP/configure" "$@")
  morph_log "make -j$MORPH_JOBS (in $dir)"
  make -C "$dir" -j"$MORPH_JOBS"
}

# The Morphling artifact beside the checkout (../shared/data), if present.
morph_artifact_dir() {
  local dir="$MORPH_TOP/../shared/data/morphling-artifact"
  if [ -d "$dir/profile" ]; then (cd "$dir" && pwd); fi
}

# morph_check_failed DIR: after a failed `make check` in DIR, the last lines of every test's
# log, then each failing test's log at more length, last: a CI log that is cut in the
# middle keeps its end.
morph_check_failed() {
  local dir=$1 trs
  find "$dir/tests" "$dir/python" -name '*.log' ! -name test-suite.log -exec tail -n 30 {} + >&2 2>/dev/null || true
  # lib.sh runs under `set -e`: no lookup here may end the report early.
  for trs in $(find "$dir" -name '*.trs' -exec grep -lE '^:test-result: (FAIL|ERROR|XPASS)' {} + || true); do
    morph_log "FAILED: ${trs%.trs} (its log's last 250 lines)" >&2
    tail -n 250 "${trs%.trs}.log" >&2 || true
  done
}
