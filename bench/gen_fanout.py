#!/usr/bin/env python3
"""Runs G copies of a one-thread load generator at once and merges their JSON lines.

    python3 bench/gen_fanout.py G GEN HOST PORT CLIENTS PIPELINE REQUESTS RATE SEED ARG...

For machines where one generator thread cannot keep a multi-threaded server busy (the
scaling runs of script_compare.py's `parallel` section). GEN is `scriptgen` or `dtgen`
(same argument order). Each copy gets CLIENTS/G connections, REQUESTS/G requests and seed
SEED+g, and `{g}` in any ARG becomes its index, so copies can keep to their own keys
(`p{g}:{c}`). The merged line: counts summed, elapsed_s the longest copy's, rps the total
requests over that, avg_ms weighted; p50/p99/p99.9/max are the worst copy's (an upper bound,
not the exact percentile of all requests). Standard library only.
"""

import json
import subprocess
import sys

SUMMED = ("requests", "errors", "nil_replies", "int_replies", "nonzero", "array_replies")
WORST = ("p50_ms", "p99_ms", "p999_ms", "max_ms")


def main(argv):
    if len(argv) < 9:
        sys.exit(__doc__)
    g = int(argv[0])
    gen, host, port = argv[1], argv[2], argv[3]
    clients, pipeline, requests, rate, seed = (int(x) for x in argv[4:9])
    tail = argv[9:]
    if g < 1 or clients < g:
        sys.exit("need 1 <= G <= CLIENTS")
    procs = []
    for i in range(g):
        n = requests // g + (1 if i < requests % g else 0)
        c = clients // g + (1 if i < clients % g else 0)
        cmd = [gen, host, port, str(c), str(pipeline), str(n), str(rate // g),
               str(seed + i)] + [t.replace("{g}", str(i)) for t in tail]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True))
    outs, rc = [], 0
    for p in procs:
        out, _ = p.communicate()
        rc = rc or p.returncode
        outs.append(out)
    if rc:
        sys.stdout.write("".join(outs))
        return rc
    rs = [json.loads(o.strip().splitlines()[-1]) for o in outs]
    m = {k: sum(r[k] for r in rs) for k in SUMMED}
    m["elapsed_s"] = max(r["elapsed_s"] for r in rs)
    m["rps"] = round(m["requests"] / m["elapsed_s"], 1) if m["elapsed_s"] else 0.0
    m["offered_rate"] = float(rate)
    m["first_error"] = next((r["first_error"] for r in rs if r["first_error"]), "")
    m["avg_ms"] = sum(r["avg_ms"] * r["requests"] for r in rs) / max(1, m["requests"])
    m.update({k: max(r[k] for r in rs) for k in WORST})
    m["generators"] = g
    print(json.dumps(m))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
