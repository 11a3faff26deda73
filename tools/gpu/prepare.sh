#!/usr/bin/env bash
# Here, before a run on the GPU machine: copies the Debian packages the build needs there
# (../shared/gpu/debs, see ../shared/gpu/README.md) into the ignored folder .gpu/debs, which the
# device call carries (../shared does not travel). Then, through the device tool:
#   run(command="bash tools/gpu/test.sh", carry=[".gpu"], timeout_s=600)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${ONNXOPT_SHARED_DIR:-$root/../shared}
[ -d "$shared/gpu/debs" ] || shared=/work/shared
src=$shared/gpu/debs
if ! ls "$src"/*.deb >/dev/null 2>&1; then
  echo "prepare.sh: no .deb files in $src (set ONNXOPT_SHARED_DIR to the shared folder)" >&2
  exit 1
fi
mkdir -p "$root/.gpu/debs"
rm -f "$root/.gpu/debs"/*.deb
cp "$src"/*.deb "$root/.gpu/debs/"
echo "prepare.sh: $(ls "$root/.gpu/debs" | wc -l) packages ($(du -sh "$root/.gpu" | cut -f1)) in .gpu/debs"
