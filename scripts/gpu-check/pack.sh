#!/usr/bin/env bash
# pack.sh [BUILD_DIR]: what a machine with a GPU but without Morph's build dependencies
# needs to run run.sh, in $MORPH_GPU_PACK (default .gpu/ of the source tree, which git
# ignores; pass it to the device tool's carry): morph-profile built here with CUDA and NCCL, the libraries it loads except
# the C/C++ runtimes and CUDA's (the GPU machine's own are used), Open MPI's components,
# hwloc's PCI plugin, and the headers native.sh compiles morph._native with.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
exe=$build/profiler/.libs/morph-profile  # libtool's wrapper is profiler/morph-profile
[ -x "$exe" ] || exe=$build/profiler/morph-profile
[ "$(head -c 4 "$exe" 2>/dev/null | tail -c 3)" = ELF ] || { echo "pack.sh: $exe not found: build morph-profile first (configure found CUDA and NCCL?)" >&2; exit 1; }
out=${MORPH_GPU_PACK:-$top/.gpu}
[ ! -e "$out" ] || [ -x "$out/bin/morph-profile" ] || { echo "pack.sh: $out exists and is no pack: not replaced" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/hwloc" "$out/include"
cp "$exe" "$out/bin/"
LD_LIBRARY_PATH=$build/libmorph/.libs ldd "$exe" | awk '$3 ~ /\// {print $3}' |
  grep -vE '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|libcuda|libcudart|libnccl)\.so' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
multiarch=/usr/lib/$(gcc -print-multiarch)
cp -L "$multiarch/libpciaccess.so.0" "$out/lib/"
cp -r "$multiarch/openmpi/lib/openmpi3" "$out/ompi-components"
cp "$multiarch/hwloc/hwloc_pci.so" "$out/hwloc/"
strip --strip-debug "$out"/bin/* "$out"/lib/*
cp -r /usr/include/fmt /usr/include/nlohmann /usr/include/xxhash.h "$out/include/"
echo "pack.sh: $(du -sh "$out" | cut -f1) in $out"
