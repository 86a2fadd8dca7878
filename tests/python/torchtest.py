"""Shared set-up of the opplace.torch tests (run by ctest; exit 77 = skipped)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

try:
    import torch  # noqa: F401  (only whether it imports)
except ImportError:
    print("SKIPPED: /usr/bin/python3 cannot import torch; install the Debian package "
          "python3-torch (scripts/debian-packages.txt lists it)")
    sys.exit(77)

OPPLACE = os.environ.get("OPPLACE") or os.path.join(ROOT, "build", "opplace")


def opplace(*args, check=True):
    r = subprocess.run([OPPLACE] + [str(a) for a in args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError("opplace %s failed (%d): %s" % (" ".join(map(str, args)),
                                                            r.returncode, r.stderr))
    return r


def algorithms():
    out = opplace("algos").stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def load(path):
    with open(path) as f:
        return json.load(f)


def tmpdir():
    return tempfile.mkdtemp(prefix="opplace_torch_")


def check_realizable(graph, placement):
    """Every backward op on its forward op's device, every update on its
    parameter holder's device, every colocation group on one device.
    Returns a list of violations."""
    dev = placement["device_of"]
    ops = {o["name"]: o for o in graph["ops"]}
    bad = []
    group_dev = {}
    for name, o in ops.items():
        g = o.get("colocate")
        if g:
            if g in group_dev and group_dev[g] != dev[name]:
                bad.append("group %s split: %s on %s, another on %s"
                           % (g, name, dev[name], group_dev[g]))
            group_dev.setdefault(g, dev[name])
        if name.startswith("b/"):
            owner = name[2:].rsplit("/", 1)[0]
            if dev[name] != dev[owner]:
                bad.append("%s on %s, its forward op %s on %s" % (name, dev[name], owner, dev[owner]))
    return bad
