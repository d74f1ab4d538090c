#!/usr/bin/env python3
"""Merge result folders of separate `longmix sweep` runs (e.g. one per width) into one folder
for a single report. Rows are copied unchanged; results.json keeps the first folder's
environment and lists every source folder with its own environment; peers.json rows are
concatenated. Usage: tools/merge_results.py OUT SRC1 SRC2 ...
"""
import csv
import json
import os
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, srcs = sys.argv[1], sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    for name in ("results_flash.csv", "results_hyena.csv", "results_attention.csv"):
        header, rows = None, []
        for s in srcs:
            p = os.path.join(s, name)
            if not os.path.exists(p):
                continue
            with open(p, newline="") as f:
                r = list(csv.reader(f))
            if header is None:
                header = r[0]
            elif r[0] != header:
                sys.exit(f"{p}: header differs from the first folder's")
            rows += r[1:]
        if header:
            with open(os.path.join(out, name), "w", newline="") as f:
                csv.writer(f, lineterminator="\n").writerows([header] + rows)
    merged, peers = None, None
    sources = []
    for s in srcs:
        with open(os.path.join(s, "results.json")) as f:
            j = json.load(f)
        sources.append({"folder": os.path.basename(os.path.normpath(s)), "environment": j["environment"],
                        "checks": j.get("checks", [])})
        if merged is None:
            merged = {"environment": dict(j["environment"]), "checks": [], "rows": []}
        merged["checks"] += j.get("checks", [])
        merged["rows"] += j.get("rows", [])
        pp = os.path.join(s, "peers.json")
        if os.path.exists(pp):
            with open(pp) as f:
                pj = json.load(f)
            peers = peers or {"environment": pj["environment"], "rows": []}
            peers["rows"] += pj["rows"]
    cmds = [x["environment"].get("command_line", "?") for x in sources]
    merged["environment"]["command_line"] = " ; ".join(cmds)
    merged["merged_from"] = sources
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(merged, f, indent=2)
    if peers:
        with open(os.path.join(out, "peers.json"), "w") as f:
            json.dump(peers, f, indent=1)


if __name__ == "__main__":
    main()
