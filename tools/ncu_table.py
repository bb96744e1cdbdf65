"""Print an Nsight Compute raw CSV (ncu --csv --page raw --metrics ...) as one line per kernel.

    python tools/ncu_table.py ncu.csv
"""
import csv
import sys

SHORT = {
    "gpu__time_duration.sum": "us",
    "dram__bytes_read.sum": "rd MB",
    "dram__bytes_write.sum": "wr MB",
    "lts__t_sector_hit_rate.pct": "L2 hit%",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occ%",
    "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue%",
    "sm__inst_executed.sum": "Minstr",
    "launch__registers_per_thread": "regs",
    "launch__grid_size": "grid",
    "launch__block_size": "block",
    "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active": "alu%",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": "fma%",
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active": "lsu%",
}


def _num(v):
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return None


def main(path):
    lines = [l for l in open(path) if l.startswith('"')]
    rows = list(csv.reader(lines))
    if len(rows) < 3:
        print("no kernels profiled:", path)
        return
    head, units, data = rows[0], rows[1], rows[2:]
    col = {h: i for i, h in enumerate(head)}
    for r in data:
        name = r[col["Kernel Name"]].replace("jax_fhe::", "").replace("(anonymous namespace)::", "")[:90]
        out = []
        for m, label in SHORT.items():
            if m not in col:
                continue
            v = _num(r[col[m]])
            u = units[col[m]]
            if v is None:
                continue
            if m.startswith("dram__bytes"):
                v = v * {"byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1, "Gbyte": 1e3}.get(u, 1e-6)
            if m == "gpu__time_duration.sum":
                v = v * {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1, "us": 1, "msecond": 1e3}.get(u, 1)
            if m == "sm__inst_executed.sum":
                v = v / 1e6
            out.append(f"{label} {v:.1f}")
        stalls = sorted(((_num(r[i]) or 0, h.split("stalled_")[1].split("_per")[0])
                         for h, i in col.items() if "issue_stalled" in h), reverse=True)[:4]
        print(f"{name}\n    " + ", ".join(out) + "\n    stalls/issue: " +
              ", ".join(f"{n} {v:.1f}" for v, n in stalls))


if __name__ == "__main__":
    main(sys.argv[1])
