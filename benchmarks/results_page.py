"""Render benchmarks/RESULTS.md from benchmarks/results/*.json (the format: results.py).

    python benchmarks/results_page.py            # rewrite benchmarks/RESULTS.md
    python benchmarks/results_page.py --check    # exit 1 if RESULTS.md is not what the JSON gives

The benchmarks write the JSON (``--results``); this script only lays it out: one section per
area, each with what was measured and how to measure it again, a table of the latest
measurement of each operation on each device, and the table's notes.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

from results import AREAS, RESULTS_DIR, load

PAGE = pathlib.Path(__file__).resolve().parent / "RESULTS.md"
UNIT = {"us": "µs", "ms": "ms"}

HEADER = """\
# Benchmark results

How fast jax_fhe is, one table per area: each row is the latest measurement of one operation on
one device, with its parameters, the date and commit it was measured at, its time, the floor it
is read against (the bytes that must cross HBM over the measured copy bandwidth), the ratio of
the two, and the published figure or the goal it is compared to. Bootstrapping and applications
get their tables when they exist.

This page is generated: `python benchmarks/results_page.py` renders it from
`benchmarks/results/*.json`, which the benchmarks update when run with `--results` (each section
gives the commands). Edit the JSON or rerun a benchmark, not this page. What was tried on the way
and why it lost is in `docs/design-notes.md` and in the git history.

Conventions: a range a–b is the spread over runs; "wall" times are elapsed host time around a
jitted call after warm-up, "device" times the profiler's kernel time; "per item, batched" is one
vmapped (batched) call over the batch, divided by the batch; the commit is the code measured.
"""


def fmt(x) -> str:
    """A number or a [lo, hi] range as written in the JSON."""
    if isinstance(x, (list, tuple)):
        lo, hi = (fmt(v) for v in x)
        return lo if lo == hi else f"{lo}–{hi}"
    if isinstance(x, float) and x.is_integer():
        return f"{x:.1f}"
    return str(x)


def fmt_ratio(x) -> str:
    if isinstance(x, (list, tuple)):
        lo, hi = (fmt_ratio(v) for v in x)
        return lo if lo == hi else f"{lo}–{hi}"
    return f"{x:.2f}"


def cell(text: str) -> str:
    """Table-cell text: no pipes, no line breaks."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def device_name(kind: str) -> str:
    return kind[len("NVIDIA "):] if kind.startswith("NVIDIA ") else kind


def time_cell(e: dict) -> str:
    if "time" not in e:
        return "–"
    clock = f" ({e['clock']})" if e.get("clock") else ""
    return f"{fmt(e['time'])} {UNIT[e['unit']]}{clock}"


def batched_cell(e: dict) -> str:
    b = e.get("batched")
    if not b:
        return "–"
    text = f"{fmt(b['time'])} {UNIT[e['unit']]} (batch {b['batch']})"
    return text + (f", ratio {fmt_ratio(b['ratio'])}" if "ratio" in b else "")


def floor_cell(e: dict) -> str:
    f = e.get("floor")
    if not f:
        return "–"
    if "basis" in f:
        how = f["basis"]
    else:
        how = f"{f['bytes'] / 1e6:.1f} MB at {f['bandwidth_gbps']} GB/s"
    return f"{fmt(f['time'])} {UNIT[e['unit']]}: {how}"


def peer_cell(e: dict) -> str:
    parts = []
    if "peer" in e:
        parts.append(f"{e['peer']['source']}: {e['peer']['figure']}")
    if "goal" in e:
        parts.append(f"goal {e['goal']}")
    return "; ".join(parts) or "–"


def table(entries: list) -> tuple[list[str], list[str]]:
    """(markdown table lines, notes) for one area's entries, in the file's order."""
    cols = ["operation", "parameters", "device", "date", "commit", "time"]
    if any("batched" in e for e in entries):
        cols.append("per item, batched")
    if any("qps" in e for e in entries):
        cols.append("QPS")
    cols += ["floor", "ratio", "peer / goal"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    notes = []
    for e in entries:
        op = e["operation"]
        if e.get("notes"):
            notes.append(e["notes"])
            op += f" [{len(notes)}]"
        values = {"operation": op, "parameters": e["parameters"], "device": device_name(e["device"]),
                  "date": e["date"], "commit": f"`{e['commit']}`", "time": time_cell(e),
                  "per item, batched": batched_cell(e), "QPS": fmt(e["qps"]) if "qps" in e else "–",
                  "floor": floor_cell(e), "ratio": fmt_ratio(e["ratio"]) if "ratio" in e else "–",
                  "peer / goal": peer_cell(e)}
        lines.append("| " + " | ".join(cell(values[c]) for c in cols) + " |")
    return lines, notes


def precision_table(rows: list) -> list[str]:
    lines = ["| measurement | parameters | bits, mean / min | goal | date | commit | asserted by |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        mean, low = r["bits"]
        lines.append("| " + " | ".join(cell(v) for v in (
            r["operation"], r["parameters"], f"{mean} / {low}", r.get("goal", "–"), r["date"],
            f"`{r['commit']}`", f"`{r['test']}`")) + " |")
    return lines


def section(doc: dict) -> list[str]:
    out = [f"## {doc.get('title', doc['area'])}", ""]
    if doc.get("about"):
        out += [doc["about"], ""]
    if doc.get("reproduce"):
        out += ["To measure again (on the GPU; `--results` updates this table):", "", "```bash"]
        out += doc["reproduce"] + ["```", ""]
    if doc.get("entries"):
        lines, notes = table(doc["entries"])
        out += lines + [""]
        out += [f"{i}. {cell(n)}" for i, n in enumerate(notes, 1)]
        if notes:
            out.append("")
    else:
        out += ["Not measured yet.", ""]
    if doc.get("precision"):
        if doc.get("precision_about"):
            out += [doc["precision_about"], ""]
        out += precision_table(doc["precision"]) + [""]
    return out


def render(results_dir=RESULTS_DIR) -> str:
    lines = HEADER.splitlines()
    for area in AREAS:
        path = pathlib.Path(results_dir) / f"{area}.json"
        if not path.exists():
            raise FileNotFoundError(f"{path}: every area needs its results file (even with no entries)")
        lines += ([""] if lines[-1] else []) + section(load(path))
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results-dir", default=str(RESULTS_DIR), help="where the area files are")
    ap.add_argument("--out", default=str(PAGE), help="the page to write")
    ap.add_argument("--check", action="store_true", help="only compare: exit 1 if the page differs")
    args = ap.parse_args(argv)
    text = render(args.results_dir)
    out = pathlib.Path(args.out)
    if args.check:
        if not out.exists() or out.read_text() != text:
            print(f"{out} is not what {args.results_dir} renders: run python benchmarks/results_page.py",
                  file=sys.stderr)
            return 1
        return 0
    out.write_text(text)
    print(f"wrote {out} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
