#!/usr/bin/env bash
# check-dist.sh BUILDDIR: what `make distcheck` checks that the builds and tests before it
# in run-tests.sh do not, for a fraction of its time (it builds and tests a third time):
# the release tarball holds every file git tracks, and `make install` followed by
# `make uninstall` leaves no file behind. `make distcheck` stays the release-time check.
set -euo pipefail
build=$(cd "${1:?usage: check-dist.sh BUILDDIR}" && pwd)
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# The last line: a Makefile out of date is made again first, and that says so on stdout.
distdir=$(make -s -C "$build" --no-print-directory -f Makefile -f - print-distdir <<<'print-distdir: ; @echo $(distdir)' |
  tail -n 1)
make -s -C "$build" dist-gzip >/dev/null
mv "$build/$distdir.tar.gz" "$scratch/"
tar -tzf "$scratch/$distdir.tar.gz" | sed -n "s|^$distdir/||p" | grep -v -e '/$' -e '^$' | sort >"$scratch/shipped"
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
  # CI's own entry point and git's own files are not part of a release.
  git -C "$top" ls-files | grep -vE '^(\.ci/|\.gitignore$|\.gitattributes$)' | sort >"$scratch/tracked"
  missing=$(comm -23 "$scratch/tracked" "$scratch/shipped")
  if [ -n "$missing" ]; then
    printf 'check-dist: tracked files missing from the tarball (EXTRA_DIST?):\n%s\n' "$missing" >&2
    exit 1
  fi
  # Whole folders are shipped (EXTRA_DIST docs scripts): nothing untracked may ride along,
  # only what autoreconf generates.
  extra=$(comm -13 "$scratch/tracked" "$scratch/shipped" |
    grep -vxE 'Makefile\.in|aclocal\.m4|configure|config\.h\.in|build-aux/[^/]+|m4/(libtool|lt[^/]*)\.m4' || true)
  if [ -n "$extra" ]; then
    printf 'check-dist: the tarball ships files git does not track:\n%s\n' "$extra" >&2
    exit 1
  fi
  echo "check-dist: the tarball ships all $(wc -l <"$scratch/tracked") tracked files and nothing else but autoreconf's"
else
  echo "check-dist: not a git checkout: the tarball's file list is not compared"
fi

make -s -C "$build" install DESTDIR="$scratch/root" >"$scratch/install.log" 2>&1 || { cat "$scratch/install.log" >&2; exit 1; }
installed=$(find "$scratch/root" -type f | wc -l)
make -s -C "$build" uninstall DESTDIR="$scratch/root" >"$scratch/install.log" 2>&1 || { cat "$scratch/install.log" >&2; exit 1; }
left=$(find "$scratch/root" -type f -o -type l)
if [ -n "$left" ]; then
  printf 'check-dist: make uninstall left files behind:\n%s\n' "$left" >&2
  exit 1
fi
echo "check-dist: make install put $installed files, make uninstall removed them all"
