#!/usr/bin/python3
"""bench/compare's thread-scaling arithmetic, on made-up runs: the ratio to
one thread per engine, and zarisd's ratio net of the floor's loss
(z1 / (z2 - (f2 - f1)) from CPU-us/op), including the cases where a figure
is missing and results.json files written before the floor rows existed."""
import importlib.machinery
import importlib.util
import os
import sys

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "lib"))
from zaris import diag, done_testing, is_, ok  # noqa: E402


def load_compare():
    path = os.path.join(REPO_ROOT, "bench", "compare")
    loader = importlib.machinery.SourceFileLoader("bench_compare", path)
    spec = importlib.util.spec_from_loader("bench_compare", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def run(engine, threads, p, cpu_us_per_op, ops=1000000):
    r = {"threads": threads, "cores": "1" if threads == 1 else "0,1", "pipeline": p,
         "ops": ops, "ops_per_s": ops / 5.0, "server_cpu_pct": 95.0,
         "server_cpu_us_per_op": cpu_us_per_op, "server_cpu_us": cpu_us_per_op * ops}
    if engine is not None:
        r["engine"] = engine
    return r


def main():
    c = load_compare()

    # zarisd 4.0 -> 6.0 us/op, the floor 3.0 -> 4.5: the floor's loss is
    # 1.5 us/op, so zarisd's own is 0.5 and the net ratio 4.0 / 4.5.
    is_(round(c.net_of_floor(4.0, 6.0, 3.0, 4.5), 4), round(4.0 / 4.5, 4),
        "net of floor subtracts the floor's added CPU-us/op")
    is_(c.net_of_floor(4.0, 4.0, 3.0, 3.0), 1.0, "no loss anywhere: 1.0")
    # the floor losing as much as zarisd: nothing is zarisd's own
    is_(c.net_of_floor(4.0, 6.0, 3.0, 5.0), 1.0, "a loss equal to the floor's is none of zarisd's")
    is_(c.net_of_floor(4.0, 6.0, None, 5.0), None, "a missing floor figure gives no net ratio")
    is_(c.net_of_floor(4.0, 0.0, 3.0, 5.0), None, "a zero figure gives no net ratio")
    is_(c.net_of_floor(1.0, 2.0, 1.0, 9.0), None, "a floor loss above zarisd's whole cost gives none")

    rows = c.scaling_rows([run("zarisd", 1, 1, 4.0), run("zarisd", 2, 1, 6.0),
                           run("floor", 1, 1, 3.0), run("floor", 2, 1, 4.5),
                           run("zarisd", 1, 16, 0.5), run("zarisd", 2, 16, 0.5)])
    by = {(r["engine"], r["threads"], r["P"]): r for r in rows}
    ok(all(col in rows[0] for col in c.SCALE_COLUMNS), "every row has every column") or diag(rows[0])
    is_(by[("zarisd", "2", "1")]["x 1 thread"], "0.67", "zarisd 2 threads at P1: 4.0 / 6.0")
    is_(by[("zarisd", "2", "1")]["x 1 thread, net of floor"], "0.89", "zarisd net of floor at P1")
    is_(by[("floor", "2", "1")]["x 1 thread"], "0.67", "the floor's own ratio: 3.0 / 4.5")
    is_(by[("floor", "2", "1")]["x 1 thread, net of floor"], "-", "no net figure on floor rows")
    is_(by[("zarisd", "1", "1")]["x 1 thread, net of floor"], "-", "no net figure on 1-thread rows")
    is_(by[("zarisd", "2", "16")]["x 1 thread"], "1.00", "P16: same CPU per op, 1.00")
    is_(by[("zarisd", "2", "16")]["x 1 thread, net of floor"], "-", "P16 without floor runs: no net figure")
    is_(by[("zarisd", "2", "1")]["ops per srv-CPU-s"], "166,667", "ops per server-CPU-second: 1e6 / 6.0")

    # results.json from before the floor rows: runs without "engine" are zarisd's
    old = c.scaling_rows([run(None, 1, 1, 4.0), run(None, 2, 1, 5.0)])
    is_([r["engine"] for r in old], ["zarisd", "zarisd"], "old runs count as zarisd")
    is_(old[1]["x 1 thread"], "0.80", "old runs keep their ratio")
    done_testing()


if __name__ == "__main__":
    main()
