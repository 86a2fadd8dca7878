"""The roofline device profiles, read from the one place that defines them:
src/cost/profiles.c (the same numbers `opplace import` and the zoo use)."""
import os
import re

_HERE = os.path.dirname(os.path.abspath(__file__))
PROFILES_C = os.environ.get("OPPLACE_PROFILES_C") or os.path.normpath(
    os.path.join(_HERE, "..", "..", "..", "src", "cost", "profiles.c"))


class Profile:
    def __init__(self, name, kind, peak_flops, bandwidth, launch_us):
        self.name, self.kind = name, kind
        self.peak_flops, self.bandwidth, self.launch_us = peak_flops, bandwidth, launch_us

    def time_us(self, flops, bytes_moved):
        """launch_us + max(flops / peak, bytes / bandwidth) * 1e6 (profiles.c)."""
        return self.launch_us + max(flops / self.peak_flops, bytes_moved / self.bandwidth) * 1e6


def _number(expr):
    units = {"TFLOPS": 1e12, "GB": 1e9, "GIB": float(1 << 30)}
    expr = expr.strip()
    for u, v in units.items():
        expr = re.sub(r"\b%s\b" % u, repr(v), expr)
    expr = re.sub(r"(\d)LL\b", r"\1", expr)
    if not re.fullmatch(r"[0-9eE.+\-*/ ()]+", expr):
        raise ValueError(expr)
    return float(eval(expr, {"__builtins__": {}}))  # digits and operators only


def profiles():
    """{name: Profile} from profiles.c."""
    try:
        with open(PROFILES_C) as f:
            text = f.read()
    except OSError as e:
        raise RuntimeError("opplace.torch: cannot read the device profiles from %s (%s); "
                           "run from an opplace source tree or set OPPLACE_PROFILES_C"
                           % (PROFILES_C, e.strerror))
    pat = re.compile(r'\{\s*"(\w+)",\s*"(\w+)",\s*([^,]+),\s*([^,]+),\s*([^,]+),')
    found = {}
    for m in pat.finditer(text):
        try:
            found[m.group(1)] = Profile(m.group(1), m.group(2), _number(m.group(3)),
                                        _number(m.group(4)), _number(m.group(5)))
        except ValueError:
            continue
    return found


def profile(name):
    found = profiles()
    if name not in found:
        raise ValueError("opplace.torch: unknown device profile '%s' in times='estimate:%s' "
                         "(known: %s)" % (name, name, ", ".join(sorted(found))))
    return found[name]
