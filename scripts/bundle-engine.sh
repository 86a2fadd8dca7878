#!/usr/bin/env bash
# bundle-engine.sh OUT [OPPLACE] - the opplace binary and the shared libraries
# it loads in OUT/lib, all but glibc's own (they must match the machine's
# loader), and OUT/opplace, a wrapper that runs it with them: for a machine
# without the engine's Debian packages, such as the lent GPU machines, whose
# image has PyTorch but not jansson, CBC, METIS, protobuf-c or OpenBLAS.
# There: OPPLACE=OUT/opplace for `opplace.torch run` and bench/fidelity_real.py.
# The bundle is about 61 MiB (OpenBLAS 35): to carry it within a device call's
# 64 MiB, `tar -cJf OUT.tar.xz OUT` here (13 MB) and `tar -xJf OUT.tar.xz` there.
# Open MPI's own plugins are not bundled: `mpirun opplace` needs Open MPI there.
set -euo pipefail
out=${1:?usage: bundle-engine.sh OUT [OPPLACE] (default OPPLACE: build/opplace)}
bin=${2:-$(cd "$(dirname "$0")/.." && pwd)/build/opplace}
if [ ! -x "$bin" ]; then
  echo "bundle-engine: $bin is not an executable: build it first (bash scripts/test.sh)" >&2
  exit 1
fi
mkdir -p "$out/lib"
cp -L "$bin" "$out/lib/opplace.bin"
libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
for lib in $libs; do
  case $(basename "$lib") in
    ld-linux*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
cat > "$out/opplace" <<'WRAP'
#!/bin/sh
here=$(dirname "$(readlink -f "$0")")
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/lib/opplace.bin" "$@"
WRAP
chmod +x "$out/opplace"
echo "bundle-engine: $out/opplace and $(ls "$out/lib" | wc -l) files in $out/lib, $(du -sh "$out" | cut -f1)"
