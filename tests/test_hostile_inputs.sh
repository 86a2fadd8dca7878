#!/usr/bin/env bash
# test_hostile_inputs.sh OPPLACE DATA_DIR - giant and hostile inputs fail
# cleanly: exit code 1 with a message, no crash, no
# sanitizer report, and bounded memory (ulimit -v; skipped under ASan, which
# reserves terabytes of address space).
#   - JSON nested 100,000 deep
#   - integers past int64 and sizes past any machine, alone and summed
#   - a long string value (HOSTILE_STRING_MB, default 100): rejected before
#     parsing (strings are capped at 1 MiB), within 12x the file size in memory
#   - a 10^7-op graph streamed through a pipe under a 1 GB limit: exit 1
set -uo pipefail
opplace=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/opplace-hostile.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
asan=0
# grep without -q reads all of ldd's output: with -q, ldd can die of SIGPIPE and
# pipefail then hides libasan (1.5 % of runs), and ulimit -v breaks ASan
ldd "$opplace" 2>/dev/null | grep libasan > /dev/null && asan=1
fail=0
# expect NAME CODES PATTERN CMD... : exit code in CODES (e.g. "1" or "0 1"),
# first line of output matching PATTERN (empty: anything)
expect() {
  local name=$1 codes=$2 pat=$3; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if ! grep -qw -- "$rc" <<< "$codes" || grep -qE 'runtime error|Sanitizer|Segmentation' <<< "$out" ||
     { [ -n "$pat" ] && ! grep -qE -- "$pat" <<< "$out"; }; then
    echo "FAIL $name: exit $rc (want $codes, /$pat/)"; echo "$out" | tail -3 | cut -c1-300; fail=1
  else
    echo "ok   $name: exit $rc: $(grep -m1 . <<< "$out" | cut -c1-150)"
  fi
}
limited() { # KB CMD...: run under a virtual memory limit unless ASan
  local kb=$1; shift
  if [ $asan -eq 1 ]; then "$@"; else (ulimit -v "$kb"; "$@"); fi
}
head='{"format":"opplace-graph","version":1,'

{ printf '%s"ops":' "$head"; printf '[%.0s' $(seq 100000); printf ']%.0s' $(seq 100000); printf '}'; } > "$tmp/nested.json"
expect "JSON nested 100000 deep" 1 "depth" limited 1000000 "$opplace" info "$tmp/nested.json"
printf '{"a":%s1%s}' "$(printf '{"a":%.0s' $(seq 50000))" "$(printf '}%.0s' $(seq 50000))" > "$tmp/nested_cluster.json"
expect "cluster nested 50000 deep" 1 "" limited 1000000 "$opplace" place "$2/good_graph.json" --cluster "$tmp/nested_cluster.json"

op() { printf '{"name":"%s","time_us":%s,"output_bytes":%s,"param_bytes":%s}' "$@"; }
printf '%s"ops":[%s]}' "$head" "$(op a 1 18446744073709551616 0)" > "$tmp/o1.json"
expect "output_bytes past uint64" 1 "too big|too large" "$opplace" info "$tmp/o1.json"
printf '%s"ops":[%s]}' "$head" "$(op a 1 0 9223372036854775807)" > "$tmp/o2.json"
expect "param_bytes at INT64_MAX" 1 "too large" "$opplace" info "$tmp/o2.json"
printf '%s"ops":[%s]}' "$head" "$(op a 1e308 1e300 0)" > "$tmp/o3.json"
expect "1e300 bytes, 1e308 us" 1 "too large|from 0 to 1e\+12" "$opplace" info "$tmp/o3.json"
printf '%s"ops":[%s]}' "$head" "$(op a -1 0 0)" > "$tmp/o4.json"
expect "negative time" 1 "from 0 to" "$opplace" info "$tmp/o4.json"
# sizes that each pass (2^50 is the per-value cap) but add up past 2^60
ops=""; for i in $(seq 0 1099); do ops="$ops${ops:+,}$(op "p$i" 1 1125899906842624 1125899906842624)"; done
printf '%s"ops":[%s],"edges":[{"src":"p0","dst":"p1"}]}' "$head" "$ops" > "$tmp/o5.json"
# each size passes on its own; the graph's totals are bounded (2^60) so no
# sum taken later can overflow
expect "sizes whose sums overflow: info" 1 "2\\^60" "$opplace" info "$tmp/o5.json"
expect "sizes whose sums overflow: place" 1 "2\\^60" "$opplace" place "$tmp/o5.json" --algo m-etf --quiet
printf '{"format":"opplace-cluster","version":1,"devices":[{"name":"g","kind":"gpu","memory_bytes":1e40,"speed":1}]}' > "$tmp/c1.json"
expect "cluster memory 1e40 bytes" 1 "" "$opplace" place "$2/good_graph.json" --cluster "$tmp/c1.json"
printf '{"format":"opplace-cluster","version":1,"devices":[{"name":"g","kind":"gpu","memory_bytes":1,"speed":1e-320}]}' > "$tmp/c2.json"
expect "cluster speed 1e-320" "1 3" "" "$opplace" place "$2/good_graph.json" --cluster "$tmp/c2.json"

mb=${HOSTILE_STRING_MB:-100}
{ printf '%s"ops":[{"name":"' "$head"; head -c $((mb << 20)) /dev/zero | tr '\0' x; printf '","time_us":1}]}'; } > "$tmp/long.json"
expect "a ${mb} MB string value" 1 "up to 1048576 bytes" limited $(( (mb << 10) * 12 + 200000 )) "$opplace" info "$tmp/long.json"

if [ $asan -eq 1 ]; then
  echo "skip 10^7-op graph under a memory limit (ASan build)"
else
  gen() { awk 'BEGIN{printf "{\"format\":\"opplace-graph\",\"version\":1,\"ops\":[";
    for(i=0;i<10000000;i++) printf "%s{\"name\":\"o%d\",\"time_us\":1}", (i?",":""), i; printf "]}"}'; }
  expect "10^7-op graph in 1 GB" 1 "" limited 1000000 bash -c "$(declare -f gen); gen | '$opplace' info /dev/stdin"
fi

# ---- the catalogue of the outside attack's failure classes -----
# (the file-level cases - NUL, empty kind, escaped keys, numbers out of
# range - are in tests/data/bad/MANIFEST.tsv; these need a command around them)
g=$2/good_graph.json c=$2/good_cluster.json
# numbers: the largest accepted values never make inf/nan, nor abort CLP
printf '%s"ops":[{"name":"a","time_us":1e12},{"name":"b","time_us":1e12},{"name":"c","time_us":1e12,"output_bytes":1073741824}],"edges":[{"src":"a","dst":"b"},{"src":"a","dst":"c"}]}' "$head" > "$tmp/max.json"
for algo in m-sct pesto m-etf; do
  expect "largest times, --algo $algo" 0 "step time +2000000.000 s" "$opplace" place "$tmp/max.json" --algo $algo --budget-seconds 5
done
expect "largest times, info" 0 "total compute +3000000.000 s" "$opplace" info "$tmp/max.json"
if "$opplace" place "$tmp/max.json" --algo m-etf --json 2>&1 | grep -qiE 'inf|nan|null'; then
  echo "FAIL largest times: inf/nan/null in the metrics"; fail=1
else echo "ok   largest times: finite metrics"; fi
# bounded reads
expect "--cluster /dev/zero" 1 "/dev/zero: is a device" "$opplace" info "$g" --cluster /dev/zero
# clusters: linear in devices + listed links
awk 'BEGIN{printf "{\"format\":\"opplace-cluster\",\"version\":1,\"devices\":[";
  for(i=0;i<4000;i++) printf "%s{\"name\":\"g%d\",\"kind\":\"gpu\",\"memory_bytes\":1e9}", (i?",":""), i;
  printf "],\"default_link\":{\"latency_us\":10,\"us_per_byte\":1e-4}}"}' > "$tmp/c4000.json"
expect "4000-device cluster" 0 "" "$opplace" info "$g" --cluster "$tmp/c4000.json"
if [ $asan -eq 0 ] && [ -x /usr/bin/time ]; then
  kb=$( { /usr/bin/time -f '%M' "$opplace" info "$g" --cluster "$tmp/c4000.json" > /dev/null; } 2>&1 | tail -1)
  if [ "$kb" -lt 204800 ]; then echo "ok   4000-device cluster: $kb KB peak (< 200 MB)"
  else echo "FAIL 4000-device cluster: $kb KB peak (want < 200 MB)"; fail=1; fi
fi
awk 'BEGIN{n=300; printf "{\"format\":\"opplace-cluster\",\"version\":1,\"devices\":[";
  for(i=0;i<n;i++) printf "%s{\"name\":\"g%d\",\"kind\":\"gpu\",\"memory_bytes\":1e9}", (i?",":""), i;
  printf "],\"links\":["; k=0;
  for(s=0;s<n;s++) for(d=0;d<n;d++) if(s!=d) printf "%s{\"src\":\"g%d\",\"dst\":\"g%d\",\"latency_us\":5,\"us_per_byte\":4e-5}", (k++?",":""), s, d;
  printf "]}"}' > "$tmp/c300.json"
expect "89,700 listed links" 0 "" "$opplace" info "$g" --cluster "$tmp/c300.json"
awk 'BEGIN{printf "{\"format\":\"opplace-graph\",\"version\":1,\"ops\":[";
  for(i=0;i<60000;i++) printf "%s{\"name\":\"o%d\",\"time_us\":{\"k%d\":1},\"kind\":\"k%d\",\"colocate\":\"g%d\"}", (i?",":""), i, i, i, i;
  printf "]}"}' > "$tmp/g60k.json"
expect "60,000 ops with their own kind and group" 3 "can run on no device" "$opplace" info "$tmp/g60k.json"
# outputs: one writer
echo '{}' > "$tmp/real.json"; chmod 600 "$tmp/real.json"; ln -s real.json "$tmp/link.json"
expect "-o onto a symlink" 0 "" "$opplace" place "$g" --cluster "$c" --algo m-etf -o "$tmp/link.json"
if [ -L "$tmp/link.json" ] && grep -q opplace-placement "$tmp/real.json" &&
   [ "$(stat -c %a "$tmp/real.json")" = 600 ]; then echo "ok   symlink kept, target written, mode 600 kept"
else echo "FAIL symlink/mode: $(ls -l "$tmp/link.json" "$tmp/real.json")"; fail=1; fi
mkfifo "$tmp/fifo"
expect "-o onto a FIFO" 1 "is a FIFO; opplace writes only regular files" "$opplace" place "$g" --cluster "$c" --algo m-etf -o "$tmp/fifo"
[ -p "$tmp/fifo" ] || { echo "FAIL the FIFO was replaced"; fail=1; }
expect "-o onto a device node" 1 "is a device" "$opplace" place "$g" --cluster "$c" --algo m-etf -o /dev/null
[ -c /dev/null ] || { echo "FAIL /dev/null is no longer a device"; fail=1; }
cp "$tmp/real.json" "$tmp/p.json"
expect "--report r.txt" 2 "the extension picks the report" "$opplace" place "$g" --cluster "$c" --algo m-etf --report "$tmp/r.txt"
expect "--report a.svg,b.svg" 2 "two .svg files" "$opplace" place "$g" --cluster "$c" --algo m-etf --report "$tmp/a.svg,$tmp/b.svg"
expect "-o p.json --report nodir/t.json" 1 "nodir/t.json: cannot create" "$opplace" place "$g" --cluster "$c" --algo m-etf -o "$tmp/p.json" --report "$tmp/nodir/t.json"
if cmp -s "$tmp/real.json" "$tmp/p.json" && ! ls -a "$tmp" | grep -q '^\.opplace-'; then
  echo "ok   all outputs or none: p.json untouched, no temporaries"
else echo "FAIL p.json was replaced or a temporary was left"; fail=1; fi
long=$tmp/$(printf 'x%.0s' $(seq 250)).json
expect "a 255-byte file name" 0 "" "$opplace" place "$g" --cluster "$c" --algo m-etf -o "$long"
if "$opplace" place "$g" --cluster "$c" --algo m-etf -o - 2>/dev/null | python3 -c 'import json,sys; json.load(sys.stdin)'; then
  echo "ok   -o - prints only the JSON on stdout"
else echo "FAIL -o - printed more than the JSON"; fail=1; fi
# determinism: one seed, byte-identical files in reproducible mode
OPPLACE_REPRODUCIBLE=1 "$opplace" place "$g" --cluster "$c" --algo m-etf -o "$tmp/r1.json" > /dev/null
OPPLACE_REPRODUCIBLE=1 "$opplace" place "$g" --cluster "$c" --algo m-etf -o "$tmp/r2.json" > /dev/null
if cmp -s "$tmp/r1.json" "$tmp/r2.json"; then echo "ok   OPPLACE_REPRODUCIBLE=1: identical -o files"
else echo "FAIL OPPLACE_REPRODUCIBLE=1 files differ"; fail=1; fi
# budgets: 0 is explicit
expect "--budget-seconds 0" 2 "must be positive" "$opplace" place "$g" --cluster "$c" --budget-seconds 0
# weights: checked before any model is built, messages name the file
python3 - "$tmp" <<'PY'
import struct, sys, zlib
d = sys.argv[1]
def entry(name, vals):
    b = name.encode()
    return struct.pack('<I', len(b)) + b + struct.pack('<II', 1, len(vals)) + b''.join(struct.pack('<d', v) for v in vals)
body = b'OPNN' + struct.pack('<II', 1, 1) + entry('sgdp.arch', [float('nan')] + [1.0] * 15)
open(d + '/nan.bin', 'wb').write(body + struct.pack('<I', zlib.crc32(body)))
open(d + '/corrupt.bin', 'wb').write(body + struct.pack('<I', zlib.crc32(body) ^ 1))
PY
expect "corrupt weights" 1 "corrupt.bin: checksum mismatch" "$opplace" place "$g" --cluster "$c" --algo sgdp --weights "$tmp/corrupt.bin"
expect "NaN weights" 1 "nan.bin: tensor 'sgdp.arch' holds a non-finite value" "$opplace" place "$g" --cluster "$c" --algo sgdp --weights "$tmp/nan.bin"
expect "NaN Trinity weights" 1 "nan.bin: tensor 'sgdp.arch' holds a non-finite value" "$opplace" place "$g" --cluster "$c" --algo trinity --weights "$tmp/nan.bin"
# ONNX: hand-encoded protobuf (no python3-onnx needed)
python3 - "$tmp" <<'PY'
import struct, sys
d = sys.argv[1]
def varint(n):
    out = b''
    while True:
        b = n & 0x7F; n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n: return out
def field(num, payload): return varint(num << 3 | 2) + varint(len(payload)) + payload
def s(num, text): return field(num, text.encode())
def node(name, ins, outs, op='Relu'):
    return field(1, b''.join(s(1, i) for i in ins) + b''.join(s(2, o) for o in outs) + s(3, name) + s(4, op))
def vinfo(name, dims):  # ValueInfoProto{name, type{tensor_type{elem_type 1, shape{dim...}}}}
    shape = b''.join(field(1, varint(1 << 3) + varint(x)) for x in dims)
    tt = varint(1 << 3) + varint(1) + field(2, shape)
    return s(1, name) + field(2, field(1, tt))
def model(graph): return field(8, varint(2 << 3) + varint(13)) + field(7, graph)
g = node('a#2', ['x'], ['t0']) + node('a', ['t0'], ['t1']) + node('a', ['t1'], ['t2']) + field(11, vinfo('x', [4]))
open(d + '/dup.onnx', 'wb').write(model(g))
g = node('big', ['x'], ['o1', 'o2']) + field(11, vinfo('x', [4])) + field(13, vinfo('o1', [250000000000000])) + field(13, vinfo('o2', [250000000000000]))
open(d + '/huge.onnx', 'wb').write(model(g))
g = node('n', ['x'], ['w']) + field(5, s(8, 'w') + varint(1 << 3) + varint(4)) + field(11, vinfo('x', [4]))
open(d + '/init.onnx', 'wb').write(model(g))
open(d + '/empty_nodes.onnx', 'wb').write(model(field(1, b'') * 1000001))
PY
expect "ONNX repeated node names" 0 "" "$opplace" import "$tmp/dup.onnx" -o "$tmp/dup.json"
if grep -q '"a#2#2"' "$tmp/dup.json" 2>/dev/null; then echo "ok   ONNX names renamed stably (a#2, a, a#2#2)"
else echo "FAIL ONNX renaming: $(grep -o '"name": "[^"]*"' "$tmp/dup.json" | head -5 | tr '\n' ' ')"; fail=1; fi
expect "ONNX outputs past 2^50" 1 "huge.onnx: node 0 .'big'.: its outputs hold" "$opplace" import "$tmp/huge.onnx" -o "$tmp/huge.json"
expect "ONNX node writes an initializer" 1 "init.onnx: tensor 'w' is an initializer" "$opplace" import "$tmp/init.onnx" -o "$tmp/init.json"
expect "ONNX 10^6+1 empty nodes" 1 "1000001 nodes, more than the 1000000" limited 400000 "$opplace" import "$tmp/empty_nodes.onnx" -o "$tmp/e.json"
# the calibration CSV follows the same rules
printf 'src_kind,dst_kind,bytes,time_us\ngpu,gpu,1000,5\ngpu\0x,gpu,2000,6\n' > "$tmp/nul.csv"
expect "CSV with a NUL byte" 1 "nul.csv:3: a NUL byte" "$opplace" fit-comm "$tmp/nul.csv"
printf 'src_kind,dst_kind,bytes,time_us\ngpu,gpu,1000,5\ngpu,gpu,2000,1e300\n' > "$tmp/big.csv"
expect "CSV time past 1e12" 1 "big.csv:3: bytes .0 to 2\\^50. and time_us" "$opplace" fit-comm "$tmp/big.csv"
# interrupts: SIGINT stops a running command with its best result and exit 130
# (budget < 60 s: auto's portfolio and refinement, not Pesto's CBC, which
# installs its own SIGINT handler - a Ctrl-C inside CBC's preprocessing
# crashed in CglPreProcess::postProcess under ASan; pesto now runs CBC in a
# child process that it kills, tested in tests/test_pesto.c)
"$opplace" zoo transformer --layers 2 --batch 32 -o "$tmp/tr.json" 2> /dev/null
"$opplace" place "$tmp/tr.json" --budget-seconds 50 --progress -o "$tmp/int.json" > /dev/null 2> "$tmp/int.err" &
# once the search runs (its first progress line; a loaded machine under ASan
# may take seconds to get there), and a second more
pid=$!; for _ in $(seq 100); do grep -q "^auto:" "$tmp/int.err" 2>/dev/null && break; sleep 0.3; done
sleep 1; kill -INT $pid; wait $pid; rc=$?
if [ $rc -eq 130 ] && grep -q opplace-placement "$tmp/int.json" 2>/dev/null && grep -q "interrupted" "$tmp/int.err"; then
  echo "ok   SIGINT: exit 130, best result written: $(tail -1 "$tmp/int.err")"
else echo "FAIL SIGINT: exit $rc, $(tail -2 "$tmp/int.err" | tr '\n' ' ')"; fail=1; fi
exit $fail
