#!/usr/bin/env bash
# Here, before a run on the GPU machine: packs what the run needs there into the ignored folder
# .gpu/, which goes there with the tree (the shared folder does not):
#   .gpu/debs/*.deb               the Debian packages the build needs (SHARED/gpu/debs, see
#                                 SHARED/gpu/README.md)
#   .gpu/onnx-node-tests.tar.xz   SHARED/onnx-node-tests (the conformance group's cases)
#   .gpu/models-real.tar.xz       SHARED/models/real (part of the models group's corpus)
# SHARED is $ONNXOPT_SHARED_DIR (or $ONNXOPT_SHARED), by default ../shared beside the repository.
# A tarball newer than every file of its source is kept (xz takes a minute on a busy machine).
# Then, on the GPU machine, from the root of a copy of this tree that includes .gpu/:
#   bash tools/gpu/test.sh [GROUP...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${ONNXOPT_SHARED_DIR:-${ONNXOPT_SHARED:-$root/../shared}}
src=$shared/gpu/debs
if ! ls "$src"/*.deb >/dev/null 2>&1; then
  echo "prepare.sh: no .deb files in $src (set ONNXOPT_SHARED_DIR to the shared folder)" >&2
  exit 1
fi
mkdir -p "$root/.gpu/debs"
rm -f "$root/.gpu/debs"/*.deb
cp "$src"/*.deb "$root/.gpu/debs/"
echo "prepare.sh: $(find "$root/.gpu/debs" -name '*.deb' | wc -l) packages in .gpu/debs"

# pack NAME PARENT DIR: PARENT/DIR as .gpu/NAME.tar.xz, unless that is newer than all of it.
pack() {
  local tarball=$root/.gpu/$1.tar.xz parent=$2 dir=$3
  if [ ! -d "$parent/$dir" ]; then
    echo "prepare.sh: $parent/$dir not found (set ONNXOPT_SHARED_DIR to the shared folder)" >&2
    exit 1
  fi
  if [ -f "$tarball" ] && [ -z "$(find "$parent/$dir" -newer "$tarball" -print -quit)" ]; then
    echo "prepare.sh: $tarball is up to date"
    return 0
  fi
  tar -C "$parent" -cf - "$dir" | xz -T2 -6 >"$tarball.tmp"
  mv "$tarball.tmp" "$tarball"
  echo "prepare.sh: $tarball ($(du -h "$tarball" | cut -f1))"
}
pack onnx-node-tests "$shared" onnx-node-tests
pack models-real "$shared/models" real

# nanobind, which the Python package's module builds with (the python group; the GPU machine has no
# network): its wheel, of the version in .venv.
mkdir -p "$root/.gpu/wheels"
nb=$("$root/.venv/bin/python" -c 'import nanobind; print(nanobind.__version__)')
if ! ls "$root/.gpu/wheels/nanobind-$nb-"*.whl >/dev/null 2>&1; then
  rm -f "$root/.gpu/wheels"/nanobind-*.whl
  "$root/.venv/bin/python" -m pip download -q --no-deps -d "$root/.gpu/wheels" "nanobind==$nb"
fi
echo "prepare.sh: $(ls "$root/.gpu/wheels")"
echo "prepare.sh: .gpu holds $(du -sh "$root/.gpu" | cut -f1) (it travels with the tree: keep it small)"
