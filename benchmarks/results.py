"""The results format shared by the benchmarks and ``results_page.py``.

One JSON file per area under ``benchmarks/results/`` (``kernels``, ``ckks``, ``keyswitch``,
``bootstrap``, ``apps``, ``pir``, ``bfv_bgv``) holds the latest measurement of each operation; ``results_page.py`` renders them into
``benchmarks/RESULTS.md``. A file is::

    {"area": "kernels", "title": "...", "about": "...", "reproduce": ["python benchmarks/..."],
     "entries": [ENTRY, ...], "precision": [...]}          # "precision": CKKS only

and an ENTRY is one measurement (one device, one commit)::

    {"key": "ntt30/N=65536/L=48/B=16",       # what was measured; with "device", its identity
     "operation": "NTT forward", "parameters": "N = 2^16, L = 48, batch 16, 30-bit primes",
     "device": "NVIDIA H100 80GB HBM3", "date": "2026-11-27", "commit": "d83939d",
     "unit": "us" or "ms",
     "time": 208.1 or [208.1, 208.2],          # a range: the spread over runs
     "clock": "device" or "wall",              # profiler-traced kernel time, or elapsed
     "batched": {"batch": 8, "time": ...},     # optional: time per item of a batched call
     "floor": {"time": ..., "bytes": ..., "bandwidth_gbps": ...} or {"time": ..., "basis": "..."},
     "ratio": time / floor, "qps": ..., "peer": {"figure": "...", "source": "..."},
     "goal": "...", "notes": "..."}

A benchmark run with ``--results`` merges its entries into its area's file: an entry replaces
the one with the same key and device, keeping that entry's ``peer`` and ``goal`` (figures from
papers, which no run measures); other entries stay.
"""
from __future__ import annotations

import json
import pathlib
import subprocess
import time

RESULTS_DIR = pathlib.Path(__file__).resolve().parent / "results"
AREAS = ("kernels", "ckks", "keyswitch", "bootstrap", "apps", "pir", "bfv_bgv")
UNITS = ("us", "ms")
REQUIRED = ("key", "operation", "parameters", "device", "date", "commit", "unit")
#: fields a measurement does not produce, carried over from the entry it replaces
CARRIED = ("peer", "goal")


def default_path(area: str) -> pathlib.Path:
    if area not in AREAS:
        raise ValueError(f"unknown results area {area!r}; expected one of {AREAS}")
    return RESULTS_DIR / f"{area}.json"


def git_commit() -> str:
    """Short hash of the checked-out commit, with "+" when the package's tracked sources differ
    from it (the measured code is then not exactly that commit); "unknown" outside a git
    checkout (set the entry's commit by hand then)."""
    root = pathlib.Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=root, check=False).stdout.strip()
        if not head:
            return "unknown"
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "ffi", "jax_fhe", "CMakeLists.txt"],
                               capture_output=True, cwd=root, check=False).returncode != 0
    except OSError:
        return "unknown"
    return head + ("+" if dirty else "")


def today() -> str:
    return time.strftime("%Y-%m-%d")


def rounded(x, digits: int = 1):
    """A number, or a [lo, hi] range, rounded for the page."""
    if isinstance(x, (list, tuple)):
        return [round(float(v), digits) for v in x]
    return round(float(x), digits)


def entry(key: str, operation: str, parameters: str, device: str, *, unit: str = "us", time=None,
          clock: str | None = None, batched: dict | None = None, floor: dict | None = None,
          ratio=None, qps=None, notes: str | None = None, commit: str | None = None,
          date: str | None = None) -> dict:
    """One measurement in the results format (``commit`` and ``date`` default to the checkout's
    and today's)."""
    e = dict(key=key, operation=operation, parameters=parameters, device=device,
             date=date or today(), commit=git_commit() if commit is None else commit, unit=unit)
    for name, value in (("time", time), ("clock", clock), ("batched", batched), ("floor", floor),
                        ("ratio", ratio), ("qps", qps), ("notes", notes)):
        if value is not None:
            e[name] = value
    validate_entry(e)
    return e


def _number_or_range(x) -> bool:
    if isinstance(x, (list, tuple)):
        return len(x) == 2 and all(isinstance(v, (int, float)) for v in x) and x[0] <= x[1]
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def validate_entry(e: dict) -> None:
    """Raise ValueError unless ``e`` is a well-formed entry."""
    missing = [k for k in REQUIRED if not e.get(k)]
    if missing:
        raise ValueError(f"results entry {e.get('key')!r} lacks {missing}")
    if e["unit"] not in UNITS:
        raise ValueError(f"results entry {e['key']!r}: unit {e['unit']!r}, expected one of {UNITS}")
    if "time" not in e and "batched" not in e:
        raise ValueError(f"results entry {e['key']!r} has neither 'time' nor 'batched'")
    for name in ("time", "ratio", "qps"):
        if name in e and not _number_or_range(e[name]):
            raise ValueError(f"results entry {e['key']!r}: {name} must be a number or [lo, hi], got {e[name]!r}")
    if "batched" in e:
        b = e["batched"]
        if not (isinstance(b, dict) and isinstance(b.get("batch"), int) and _number_or_range(b.get("time"))):
            raise ValueError(f"results entry {e['key']!r}: batched must be {{'batch': int, 'time': number}}")
    if "floor" in e:
        f = e["floor"]
        if not (isinstance(f, dict) and _number_or_range(f.get("time"))
                and ("basis" in f or ("bytes" in f and "bandwidth_gbps" in f))):
            raise ValueError(f"results entry {e['key']!r}: floor needs 'time' and either 'basis' or "
                             "'bytes' and 'bandwidth_gbps'")
    if e.get("clock") not in (None, "device", "wall"):
        raise ValueError(f"results entry {e['key']!r}: clock must be 'device' or 'wall'")
    if "peer" in e and not (isinstance(e["peer"], dict) and e["peer"].get("figure") and e["peer"].get("source")):
        raise ValueError(f"results entry {e['key']!r}: peer needs 'figure' and 'source'")


def load(path) -> dict:
    doc = json.loads(pathlib.Path(path).read_text())
    if doc.get("area") not in AREAS:
        raise ValueError(f"{path}: area {doc.get('area')!r}, expected one of {AREAS}")
    for e in doc.get("entries", []):
        validate_entry(e)
    seen = set()
    for e in doc.get("entries", []):
        ident = (e["key"], e["device"])
        if ident in seen:
            raise ValueError(f"{path}: two entries for {ident}")
        seen.add(ident)
    return doc


def merge(path, area: str, entries: list) -> dict:
    """Merge ``entries`` into the results file at ``path`` (created if missing) and write it;
    returns the document."""
    path = pathlib.Path(path)
    doc = load(path) if path.exists() else {"area": area, "title": area, "entries": []}
    if doc["area"] != area:
        raise ValueError(f"{path} holds area {doc['area']!r}, not {area!r}")
    old = {(e["key"], e["device"]): i for i, e in enumerate(doc["entries"])}
    for e in entries:
        validate_entry(e)
        i = old.get((e["key"], e["device"]))
        if i is None:
            old[(e["key"], e["device"])] = len(doc["entries"])
            doc["entries"].append(e)
        else:
            kept = {k: doc["entries"][i][k] for k in CARRIED if k in doc["entries"][i] and k not in e}
            doc["entries"][i] = {**e, **kept}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return doc


def add_argument(parser, area: str) -> None:
    """The benchmarks' ``--results [FILE]`` flag (FILE defaults to the area's file)."""
    parser.add_argument("--results", nargs="?", const=str(default_path(area)), default=None, metavar="FILE",
                        help=f"merge this run's rows into the results file read by results_page.py "
                             f"(default FILE: benchmarks/results/{area}.json)")


def refuse_quick_default(parser, results, quick: bool, area: str) -> None:
    """A --quick run measures toy instances (on the CPU): it may write a scratch file given to
    --results, never the page's own file."""
    if quick and results and pathlib.Path(results).resolve() == default_path(area):
        parser.error(f"--quick rows are toy instances: give --results a scratch file, not {default_path(area)}")
