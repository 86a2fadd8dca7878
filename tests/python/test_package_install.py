# opplace-test: torch1.13
"""The package installs with pip and works outside the source tree: a copy of
python/ is installed with `pip install --no-deps --target`, and opplace.torch
is imported from another directory, with no path into this checkout, and gives
its device profiles (nothing reads src/cost/profiles.c)."""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

try:
    import torch  # noqa: F401  (only whether it imports)
except ImportError:
    print("SKIPPED: %s cannot import torch" % sys.executable)
    sys.exit(77)
if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode:
    print("SKIPPED: %s has no pip (Debian: python3-pip)" % sys.executable)
    sys.exit(77)

tmp = tempfile.mkdtemp(prefix="opplace_install_")
try:
    src = shutil.copytree(os.path.join(ROOT, "python"), os.path.join(tmp, "src"),
                          ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    site = os.path.join(tmp, "site")
    # --no-build-isolation: build with this Python's setuptools, no download
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                        "--no-build-isolation", "--disable-pip-version-check",
                        "--target", site, src], capture_output=True, text=True)
    if r.returncode:
        sys.exit("FAIL: pip install --target failed (%d):\n%s%s" % (r.returncode, r.stdout, r.stderr))
    shutil.rmtree(src)  # the installed copy must stand alone
    check = r"""
import os, sys
import opplace.torch
from opplace.torch import _profiles
site, root = sys.argv[1], sys.argv[2]
for mod in (opplace.torch, _profiles):
    assert os.path.realpath(mod.__file__).startswith(os.path.realpath(site) + os.sep), mod.__file__
assert os.path.realpath(_profiles.PROFILES_JSON).startswith(os.path.realpath(site)), _profiles.PROFILES_JSON
v = _profiles.profile("v100")
assert (v.kind, v.peak_flops, v.bandwidth, v.launch_us) == ("gpu", 15.7e12, 900e9, 5.0), vars(v)
assert abs(v.time_us(15.7e12, 0) - 1000005.0) < 1e-6
assert sorted(_profiles.profiles()) == sorted(["k80", "p100", "v100", "a100", "h100", "cpu"])
prefix = os.path.realpath(sys.prefix) + os.sep  # the venv may lie in the checkout (.venv)
leaked = [m for m, x in sys.modules.items() if getattr(x, "__file__", None)
          and os.path.realpath(x.__file__).startswith(root + os.sep)
          and not os.path.realpath(x.__file__).startswith(prefix)]
assert not leaked, "modules loaded from the checkout: %s" % leaked
print("ok: opplace.torch from %s, torch %s" % (os.path.dirname(opplace.torch.__file__),
                                            __import__("torch").__version__))
"""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPPLACE")}
    env["PYTHONPATH"] = site
    elsewhere = os.path.join(tmp, "elsewhere")
    os.mkdir(elsewhere)
    r = subprocess.run([sys.executable, "-s", "-c", check, site, os.path.realpath(ROOT)],
                       cwd=elsewhere, env=env, capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    if r.returncode:
        sys.exit("FAIL: the installed package does not work outside the source tree:\n" + r.stderr)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
