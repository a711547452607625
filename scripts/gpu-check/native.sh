#!/usr/bin/env bash
# native.sh OUT_DIR: builds the `morph` Python package (morph._native and the .py files)
# for $PYTHON (default python3), without configure: the GPU machine's Python is not the one
# the build tree's module was made for. Headers from $MORPH_GPU_PACK/include (pack.sh) or the
# system's; xxHash header-only; $NATIVE_OPT (default -O1). PYTHONPATH=OUT_DIR then
# imports it.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pack=${MORPH_GPU_PACK:-$top/.gpu}
python=${PYTHON:-python3}
opt=${NATIVE_OPT:--O1}
out=$1
obj=$out/obj
mkdir -p "$out/morph" "$obj"
cp "$top"/python/morph/*.py "$out/morph/"
printf '#define MORPH_PKGDATADIR "/usr/share/morph"\n#define MORPH_SYSCONFDIR "/etc"\n' >"$obj/defs.h"
# The sources of the libraries python/local.mk links the module with.
sources=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$top/libmorph/local.mk" |
  sed -n 's/^libmorph_libmorph_\(base\|state\|launch\)_la_SOURCES *=//p' | tr -s ' \t' '\n' |
  grep -E '\.(cc|c)$' | sed 's|%reldir%|libmorph|')
pyinc=$("$python" -m pybind11 --includes 2>/dev/null ||
  echo "-I$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')")
# fmt's compiled part in one object of its own, as libfmt has it (format-inl.h and the
# templates format.h declares extern): with FMT_HEADER_ONLY every object compiled it,
# which doubled the build.
cat >"$obj/fmt.cc" <<'EOF'
#include <fmt/format-inl.h>
FMT_BEGIN_NAMESPACE
namespace detail {
template auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl(locale_ref) -> char;
}  // namespace detail
FMT_END_NAMESPACE
EOF
export top obj opt cxxflags="-std=c++20 $opt -fPIC -fvisibility=hidden -DXXH_INLINE_ALL -include $obj/defs.h -I$top -I$pack/include $pyinc"
# shellcheck disable=SC2086  # $cxxflags and $sources are lists
compile() {
  local src=$top/$1
  [ "$1" = fmt.cc ] && src=$obj/fmt.cc
  case $1 in
    *.c) gcc -std=gnu11 $opt -fPIC -I"$top" -c "$src" -o "$obj/${1//\//_}.o" ;;
    *) g++ $cxxflags -w -c "$src" -o "$obj/${1//\//_}.o" ;;
  esac
}
export -f compile
# shellcheck disable=SC2086
printf '%s\n' python/native.cc fmt.cc $sources | xargs -P "$(nproc)" -I{} bash -c 'compile {}'
g++ -shared -o "$out/morph/_native$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')" "$obj"/*.o -lpthread
