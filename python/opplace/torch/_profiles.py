"""The roofline device profiles, the same numbers `opplace import` and the zoo
use (src/cost/profiles.c).  They are read from profiles.json, shipped in this
package and generated from the C table by `opplace cluster --profiles`; the
ctest test test_profiles_json fails when the two differ."""
import json
import os

PROFILES_JSON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiles.json")


class Profile:
    def __init__(self, name, kind, peak_flops, bandwidth, launch_us,
                 memory_bytes=None, source=None):
        self.name, self.kind = name, kind
        self.peak_flops, self.bandwidth, self.launch_us = peak_flops, bandwidth, launch_us
        self.memory_bytes, self.source = memory_bytes, source

    def time_us(self, flops, bytes_moved):
        """launch_us + max(flops / peak, bytes / bandwidth) * 1e6 (profiles.c)."""
        return self.launch_us + max(flops / self.peak_flops, bytes_moved / self.bandwidth) * 1e6


_cache = None


def profiles():
    """{name: Profile}, in the order of the C table."""
    global _cache
    if _cache is None:
        try:
            with open(PROFILES_JSON) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise RuntimeError("opplace.torch: cannot read the device profiles from %s (%s); "
                               "reinstall the package (pip install ./python)" % (PROFILES_JSON, e))
        _cache = {p["name"]: Profile(p["name"], p["kind"], float(p["peak_flops"]),
                                     float(p["mem_bandwidth"]), float(p["launch_us"]),
                                     p.get("memory_bytes"), p.get("source"))
                  for p in doc["profiles"]}
    return dict(_cache)


def profile(name):
    found = profiles()
    if name not in found:
        raise ValueError("opplace.torch: unknown device profile '%s' in times='estimate:%s' "
                         "(known: %s)" % (name, name, ", ".join(sorted(found))))
    return found[name]
