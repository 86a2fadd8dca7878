#!/usr/bin/env python3
"""torch_corpus.py - third-party PyTorch models through opplace (issue 32, item 4).

Each model of bench/corpus_models.py goes through these stages, each timed,
each failure recorded with its exception type and first line:
  build   build the model (random weights, dropout 0) and its reference
          training step: loss and every parameter's gradient on an unplaced
          copy of the model
  export  opplace.torch.export(model, inputs, g.json, loss_fn, times="estimate:v100")
  info    opplace info g.json
  place   opplace place g.json --cluster c.json --algo auto --budget-seconds 2
          (c.json: opplace cluster --preset v100-nvlink --gpus 4, made once)
  apply   opplace.torch.apply(model, g.json, p.json, "cpu")
  step    one training step of the placed model: loss_fn(output).backward();
          loss and gradients equal the reference's (assert_close, rtol 1e-4,
          atol 1e-4 x the largest |gradient| of that parameter, at least 1e-8)

Every model runs in its own forked process (the libraries are imported once,
before the fork) with a timeout and an address-space cap, so one bad model
cannot take the run down.  Results: one JSON line per model (--out), and a
Markdown table on stdout (per family: passes per stage; each failure and its
cause).

usage: torch_corpus.py [--opplace PATH] [--filter F[,F...]] [--out r.jsonl]
                       [--timeout 300] [--mem-gb 12] [--list] [--report r.jsonl]
  F: a family (torchvision, timm, torchaudio, transformers), a model name
  (tv.resnet18, timm.resnet18, ta.Conformer, hf.llama) or a part of one.
"""
import argparse
import copy
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

STAGES = ("build", "export", "info", "place", "apply", "step")
BIG_PARAMS = 100_000_000  # above: reference step on the model itself, apply(copy=False)


def loss_fn(out):
    """The corpus loss: sum over the output's floating tensors of mean(x^2)."""
    import torch
    ts = []

    def walk(x):
        if isinstance(x, torch.Tensor):
            if x.is_floating_point():
                ts.append(x)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, (tuple, list)):
            for v in x:
                walk(v)
    walk(out)
    if not ts:
        raise ValueError("no floating-point tensor in the output")
    loss = ts[0].float().pow(2).mean()
    for t in ts[1:]:
        loss = loss + t.float().pow(2).mean().to(loss.device)
    return loss


def _cause(e):
    msg = str(e).strip().splitlines()
    first = next((m.strip() for m in msg if m.strip()), "")
    if len(first) > 300:
        first = first[:297] + "..."
    return "%s: %s" % (type(e).__name__, first)


def _frame(f):
    path = f.filename
    path = os.path.relpath(path, ROOT) if path.startswith(ROOT) else "/".join(path.split("/")[-2:])
    return "%s:%d (%s)" % (path, f.lineno, f.name)


def _where(e):
    """Where it failed: the innermost frame of the first exception of the chain
    (the construct that failed, often in the model's code), and the innermost
    frame inside python/opplace/ when that is another one."""
    root = e
    seen = set()
    while id(root) not in seen and (root.__cause__ or root.__context__) is not None:
        seen.add(id(root))
        root = root.__cause__ or root.__context__
    tb = traceback.extract_tb(root.__traceback__) or traceback.extract_tb(e.__traceback__)
    if not tb:
        return ""
    parts = [_frame(tb[-1])]
    ours = [f for f in traceback.extract_tb(e.__traceback__) + tb if "/opplace/" in f.filename]
    if ours and _frame(ours[-1]) != parts[0]:
        parts.append("via " + _frame(ours[-1]))
    return "; ".join(parts)


def _step(model, inputs):
    import torch
    torch.manual_seed(1)
    out = model(*inputs)
    loss = loss_fn(out)
    loss.backward()
    return loss.detach().clone()


def _grads(model):
    return {n: (p.grad.detach().clone() if p.grad is not None else None)
            for n, p in model.named_parameters()}


def _compare(ref_loss, ref_grads, loss, placed):
    """assert_close of the loss and every gradient; returns (max abs diff, max rel diff)."""
    import torch
    torch.testing.assert_close(loss.cpu(), ref_loss, rtol=1e-4, atol=1e-6, msg=lambda m:
                               "loss differs: placed %.8g, reference %.8g" % (loss, ref_loss))
    got = dict(placed.named_parameters())
    missing = [n for n in ref_grads if n not in got]
    if missing:
        raise AssertionError("the placed model has no parameter %r (%d missing)"
                             % (missing[0], len(missing)))
    max_abs = max_rel = 0.0
    for n, g in ref_grads.items():
        pg = got[n].grad
        if g is None or pg is None:
            if (g is None) != (pg is None):
                raise AssertionError("gradient of %s: %s in the reference, %s when placed"
                                     % (n, "none" if g is None else "one",
                                        "none" if pg is None else "one"))
            continue
        pg = pg.detach().cpu()
        # float32 sums in another order (gradient accumulation, BatchNorm) differ by
        # a few 1e-5 of the tensor's largest element: atol scales with it
        atol = max(1e-8, 1e-4 * float(g.abs().max()))
        torch.testing.assert_close(pg, g, rtol=1e-4, atol=atol,
                                   msg=lambda m, n=n: "gradient of %s: %s" % (
                                       n, "; ".join(x.strip() for x in m.splitlines()[1:4]
                                                    if x.strip())))
        d = (pg - g).abs()
        max_abs = max(max_abs, float(d.max()) if d.numel() else 0.0)
        max_rel = max(max_rel, float((d / g.abs().clamp_min(1e-12)).max()) if d.numel() else 0.0)
    return max_abs, max_rel


class ModelChanged(AssertionError):
    """export left the model's parameters or buffers changed."""


def _unlimited_address_space():
    """In the opplace child: the model process's address-space cap lifted."""
    import resource
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def _tensors_of(model):
    """(path, tensor) of every parameter and buffer, aliases included (torch
    1.13's named_parameters has no remove_duplicate)."""
    return [(m + "." + k if m else k, t)
            for m, mod in model.named_modules(remove_duplicate=False)
            for d in (mod._parameters, mod._buffers) for k, t in d.items() if t is not None]


def _check_untouched(before, model):
    """export must leave every parameter and buffer the tensor it was (the same
    object, under every path of a module registered twice)."""
    after = dict(_tensors_of(model))
    for n, t in before:
        a = after.get(n)
        if a is not t:
            raise ModelChanged("after export, %s of the model is %s (was %s %s)"
                               % (n, "missing" if a is None else "a %s on %s" % (
                                   type(a).__name__, a.device), type(t).__name__, t.device))


def run_model(spec, workdir, opplace, cluster, record, save=lambda r: None, upto="step"):
    """All stages of one model; fills `record` (stage -> {ok, s, error}), calls
    save(record) after each stage.  Returns record."""
    import torch
    import opplace.torch as ot
    torch.set_num_threads(1)
    g = os.path.join(workdir, "g.json")
    p = os.path.join(workdir, "p.json")
    rec = record
    rec.setdefault("stages", {})
    state = {}

    def stage(name, fn):
        rec["at"] = name
        save(rec)
        t0 = time.perf_counter()
        try:
            fn()
        except BaseException as e:  # noqa: B902  (KeyboardInterrupt stops the run)
            if isinstance(e, KeyboardInterrupt):
                raise
            rec["stages"][name] = {"ok": False, "s": round(time.perf_counter() - t0, 2),
                                   "error": _cause(e), "where": _where(e)}
            rec["failed"] = name
            rec["error"] = _cause(e)
            rec["where"] = _where(e)
            save(rec)
            return False
        rec["stages"][name] = {"ok": True, "s": round(time.perf_counter() - t0, 2)}
        save(rec)
        return True

    def build():
        torch.manual_seed(0)
        model, inputs = spec.build()
        model.train()
        n = sum(q.numel() for q in model.parameters())
        rec["params"] = n
        big = n > BIG_PARAMS
        rec["big"] = big
        ref = model if big else copy.deepcopy(model)
        state["loss"] = _step(ref, inputs)
        state["grads"] = _grads(ref)
        if big:
            for q in model.parameters():
                q.grad = None
        del ref
        state["model"], state["inputs"] = model, inputs

    def export():
        model = state["model"]
        before = _tensors_of(model)
        def progress(msg):  # why the capture left fake tensors, when it did
            if "failed" in msg and "fake_failure" not in rec:
                rec["fake_failure"] = msg[:400]
        ot.export(model, state["inputs"], g, loss_fn=loss_fn, times="estimate:v100",
                  progress=progress)
        _check_untouched(before, model)
        with open(g) as f:
            gr = json.load(f)
        rec["ops"] = len(gr["ops"])
        rec["edges"] = len(gr["edges"])
        tg = gr.get("torch") or {}
        for k in ("capture", "capture_mode"):
            if tg.get(k):
                rec[k] = tg[k]

    def run_bin(*args, timeout=120):
        r = subprocess.run([opplace] + list(args), capture_output=True, text=True,
                           timeout=timeout, preexec_fn=_unlimited_address_space)
        if r.returncode != 0:
            lines = [x for x in r.stderr.splitlines() if x.strip()] or ["(no message)"]
            raise RuntimeError("opplace %s exited %d: %s" % (args[0], r.returncode, lines[-1]))
        return r

    def info():
        run_bin("info", g)

    def place():
        run_bin("place", g, "--cluster", cluster, "--algo", "auto", "--budget-seconds", "2",
                "-o", p)
        with open(p) as f:
            pl = json.load(f)
        rec["devices_used"] = len(set(pl["device_of"].values()))

    def apply():
        state["placed"] = ot.apply(state["model"], g, p, "cpu", copy=not rec.get("big"))

    def step():
        placed = state["placed"]
        placed.train()
        loss = _step(placed, state["inputs"])
        rec["loss"] = float(loss)
        rec["max_abs_diff"], rec["max_rel_diff"] = _compare(state["loss"], state["grads"],
                                                            loss, placed)

    for name, fn in (("build", build), ("export", export), ("info", info), ("place", place),
                     ("apply", apply), ("step", step)):
        if not stage(name, fn) or name == upto:
            break
    rec.pop("at", None)
    rec["ok"] = "failed" not in rec
    save(rec)
    return rec


def _vm_size():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def run_forked(spec, opplace, cluster, timeout, mem_gb, keep=None, upto="step"):
    """run_model in a forked child: timeout (s) and an address-space cap of
    mem_gb GiB above the parent's.  Returns the record."""
    workdir = keep or tempfile.mkdtemp(prefix="corpus_")
    os.makedirs(workdir, exist_ok=True)
    rpath = os.path.join(workdir, "result.json")
    rec = {"name": spec.name, "family": spec.family, "stages": {}}
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            os.setpgid(0, 0)
            if mem_gb:
                lim = _vm_size() + int(mem_gb * (1 << 30))
                # the soft limit only: the opplace program this process starts
                # lifts it (an ASan build reserves terabytes of shadow memory)
                hard = resource.getrlimit(resource.RLIMIT_AS)[1]
                resource.setrlimit(resource.RLIMIT_AS, (lim, hard))

            def save(r):
                tmp = rpath + ".tmp"
                with open(tmp, "w") as f:
                    json.dump(r, f)
                os.replace(tmp, rpath)
            run_model(spec, workdir, opplace, cluster, rec, save, upto)
        except BaseException:  # noqa: B902
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    status = None
    while True:
        wpid, st = os.waitpid(pid, os.WNOHANG)
        if wpid:
            status = st
            break
        if time.perf_counter() - t0 > timeout:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            break
        time.sleep(0.1)
    try:
        with open(rpath) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        pass
    if "ok" not in rec:  # died in a stage
        at = rec.pop("at", None) or "build"
        if status is None:
            why = "Timeout: stage still running after the model's %d s" % timeout
        elif os.WIFSIGNALED(status):
            why = "Killed: signal %d (%s)" % (os.WTERMSIG(status),
                                               signal.Signals(os.WTERMSIG(status)).name)
        else:
            why = "Exit: the process exited %d" % os.WEXITSTATUS(status)
        rec["stages"][at] = {"ok": False, "s": None, "error": why}
        rec.update(failed=at, error=why, ok=False)
    rec["wall_s"] = round(time.perf_counter() - t0, 2)
    if keep is None:
        import shutil
        shutil.rmtree(workdir, ignore_errors=True)
    return rec


def make_cluster(opplace, path):
    r = subprocess.run([opplace, "cluster", "--preset", "v100-nvlink", "--gpus", "4", "-o", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("torch_corpus: %s cluster failed: %s" % (opplace, r.stderr.strip()))


def table(recs):
    """Markdown: per family, models passing each stage; then each failure."""
    fams = []
    for r in recs:
        if r["family"] not in fams:
            fams.append(r["family"])
    lines = ["| family | models | " + " | ".join(STAGES) + " | all stages |",
             "|---|---:|" + "---:|" * (len(STAGES) + 1)]
    tot = [0] * (len(STAGES) + 2)
    for fam in fams + ["total"]:
        rs = recs if fam == "total" else [r for r in recs if r["family"] == fam]
        row = [len(rs)] + [sum(1 for r in rs if r["stages"].get(s, {}).get("ok")) for s in STAGES]
        row.append(sum(1 for r in rs if r.get("ok")))
        if fam == "total":
            row = tot
            name = "**total**"
        else:
            tot = [a + b for a, b in zip(tot, row)]
            name = fam
        lines.append("| %s | %s |" % (name, " | ".join(str(x) for x in row)))
    n, ok = len(recs), sum(1 for r in recs if r.get("ok"))
    lines.append("")
    lines.append("%d of %d models pass every stage (%.0f %%)." % (ok, n, 100.0 * ok / max(n, 1)))
    bad = [r for r in recs if not r.get("ok")]
    if bad:
        lines += ["", "| model | stage | cause | where |", "|---|---|---|---|"]
        for r in bad:
            cause = r.get("error") or ""
            if len(cause) > 200:
                cause = cause[:197] + "..."
            lines.append("| %s | %s | %s | %s |" % (
                r["name"], r.get("failed"), cause.replace("|", "\\|"), r.get("where", "")))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--opplace", default=os.environ.get("OPPLACE") or
                    os.path.join(ROOT, "build", "opplace"))
    ap.add_argument("--filter", default="", help="families / model names, comma-separated")
    ap.add_argument("--out", default=None, help="JSON lines result file")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per model")
    ap.add_argument("--mem-gb", type=float, default=12,
                    help="address space each model may add (GiB; 0: no cap)")
    ap.add_argument("--keep", default=None, help="keep each model's files under this folder")
    ap.add_argument("--upto", choices=STAGES, default="step",
                    help="last stage to run (build: check the models and references only)")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    ap.add_argument("--report", default=None, help="print the table of a result file and exit")
    a = ap.parse_args(argv)
    if a.report:
        with open(a.report) as f:
            print(table([json.loads(x) for x in f if x.strip()]))
        return 0
    import corpus_models
    specs = corpus_models.select(a.filter)
    if a.list:
        for s in specs:
            print(s.family, s.name)
        return 0
    if not specs:
        raise SystemExit("torch_corpus: no model matches %r" % a.filter)
    # import every library once, before forking (no torch compute in this process)
    import torch
    torch.set_num_threads(1)
    import opplace.torch  # noqa: F401
    for fam in sorted({s.family for s in specs}):
        try:
            __import__(corpus_models.LIBRARY[fam])
        except ImportError:
            pass
    if fam_needs_transformers(specs):
        import transformers  # noqa: F401
    tmp = tempfile.mkdtemp(prefix="corpus_run_")
    cluster = os.path.join(tmp, "c.json")
    make_cluster(a.opplace, cluster)
    out = open(a.out, "w") if a.out else None
    recs = []
    t0 = time.perf_counter()
    print("torch_corpus: %d models, torch %s, opplace %s" % (len(specs), torch.__version__,
                                                            a.opplace), file=sys.stderr)
    for i, s in enumerate(specs):
        keep = os.path.join(a.keep, s.name) if a.keep else None
        r = run_forked(s, a.opplace, cluster, a.timeout, a.mem_gb, keep, a.upto)
        r["torch"] = torch.__version__
        recs.append(r)
        if out:
            out.write(json.dumps(r) + "\n")
            out.flush()
        print("[%3d/%d %6.0f s] %-34s %s%s" % (
            i + 1, len(specs), time.perf_counter() - t0, s.name,
            "ok" if r.get("ok") else "FAIL at %s: %s" % (r.get("failed"), r.get("error")),
            "  (%.1f s)" % r["wall_s"]), file=sys.stderr)
    if out:
        out.close()
    print(table(recs))
    return 0


def fam_needs_transformers(specs):
    return any(s.family == "transformers" for s in specs)


if __name__ == "__main__":
    sys.exit(main())
