"""Summarise an Nsight Compute SASS source page (tools/gpu_ncu_source.sh's .sass.csv): stall
samples by reason, then by straight-line segment (consecutive instructions with the same
execution count), the largest first, with their top reasons.

    python tools/stall_segments.py ntt_c8.sass.csv [--top 25]
"""
import argparse
import collections
import csv


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    rows = list(csv.reader(open(args.csv)))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    hdr, data = rows[head], rows[head + 1:]
    ix = {h: i for i, h in enumerate(hdr)}
    reasons = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    num = lambda r, h: int(r[ix[h]] or 0)  # noqa: E731
    total = sum(num(r, "Warp Stall Sampling (All Samples)") for r in data)
    by_reason = collections.Counter()
    segs = []
    for r in data:
        ex = num(r, "Instructions Executed")
        if not segs or segs[-1]["ex"] != ex:
            segs.append({"ex": ex, "addr": r[0][-5:], "n": 0, "samples": 0, "why": collections.Counter(),
                         "first": r[1].strip()})
        g = segs[-1]
        g["n"] += 1
        g["samples"] += num(r, "Warp Stall Sampling (All Samples)")
        for h in reasons:
            g["why"][h[6:]] += num(r, h)
            by_reason[h[6:]] += num(r, h)
    print(f"{total} samples, {sum(num(r, 'Instructions Executed') for r in data)} warp instructions")
    print("  ".join(f"{k} {100 * v / total:.1f}%" for k, v in by_reason.most_common(10)))
    for g in sorted(segs, key=lambda g: -g["samples"])[:args.top]:
        why = " ".join(f"{k}={100 * v / total:.1f}" for k, v in g["why"].most_common(5) if v)
        print(f"{g['addr']} {g['n']:4d} instr x {g['ex']:7d}: {100 * g['samples'] / total:5.1f}%  {why}  [{g['first'][:40]}]")


if __name__ == "__main__":
    main()
