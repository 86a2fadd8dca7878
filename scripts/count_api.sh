#!/bin/sh
# scripts/count_api.sh [DIR] - how many function prototypes the public headers
# (DIR/include/opplace/*.h, default: this checkout) declare; per header, then
# the total.  Uses ctags (Debian: universal-ctags).
cd "${1:-.}" || exit 1
total=0
for f in include/opplace/*.h; do
  n=$(ctags -x --c-kinds=p --language-force=C "$f" | wc -l)
  printf '%4d %s\n' "$n" "$f"
  total=$((total + n))
done
echo "$total prototypes in total"
