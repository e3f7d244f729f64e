# SPDX-License-Identifier: GPL-2.0
"""Tests of bench/report.py on a small synthetic results tree, of the
demo's claims and plot data (bench/summarize.py, bench/demo_plot.py), and
of the profile's function_graph summary (bench/scale/fgraph.py).

Run: cd /work/main && python3 -m unittest bench/test_report.py
Standard library only; the plot test runs only where matplotlib imports.
"""

import contextlib
import gzip
import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest
import unittest.mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import demo_plot  # noqa: E402
import report  # noqa: E402
import summarize  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "scale"))
import fgraph  # noqa: E402

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None

ROOT_ENV = {
    "kernel": "6.1.0-test",
    "qemu": "QEMU emulator version 7.2.0",
    "fio": "fio-3.33",
    "commit": "abc1234",
    "mode": "quick",
    "date": "2024-01-01T00:00:00Z",
    "models": "fifo94",
}
MODEL_ENV = {
    "disk": "serial:16",
    "model": "fifo94",
    "scheduler": "none",
    "wbt_lat_usec": "0",
    "hw_queues": "1",
    "nr_requests": "64",
    "min_ratio": "10",
    "dirty_expire_centisecs": "3000",
    "dirty_writeback_centisecs": "500",
    "max_age_ms": "30000",
    "pu_interval_ms": "30000",
    # kernel is listed but has no directory: the row is left out.
    "rows": "kernel pu aipu",
    "overhead_rows": "none aipu",
    "workloads": "random rewrite db overhead",
    "trials": "3",
    "trials_other": "1",
    "duration_s": "10",
    "rate_per_s": "20",
    "mem_total_kb": "2000000",
}
PROBE = {
    "read": {"count": 300, "mean_ms": 18.2, "p99_ms": 19.5, "max_ms": 21.0},
    "write": {"count": 290, "mean_ms": 18.4, "p99_ms": 20.1, "max_ms": 22.0},
}
AGE_HIST = "0 0 0\n1 1 0\n" + "".join(f"{2 ** (b - 1)} {2**b - 1} 0\n" for b in range(2, 15))
AGE_HIST += "16384 32767 900\n32768 65535 100\n"


def write_env(path, env):
    with open(path, "w") as f:
        f.writelines(f"{k} {v}\n" for k, v in env.items())


def write_json(path, obj, prefix=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(prefix + json.dumps(obj))


def write_writes(path, times, sectors=8):
    with gzip.open(path, "wt") as f:
        f.writelines(
            f"{t:.6f} {1000 + 16 * i} {sectors} kworker/u4:1\n" for i, t in enumerate(times)
        )


def stat_text(scanned, written):
    return f"pages_dirtied {written}\npages_written {written}\nentries_scanned {scanned}\n" + (
        "pages_late 3\nflusher_runs 10\n"
    )


def random_trial(max_ms, mean_ms, std_ms, p99_ms, stat=None):
    disk = [[t * 0.25, 4 * t, 2 * t, 0, 100, 0, 0, [0]] for t in range(41)]
    trial = {
        "label": "",
        "config": {"pattern": "steady", "rate_per_s": 20, "duration_s": 10, "distinct_pages": 150},
        "elapsed_s": 10.0,
        "errors": [],
        "reads": {
            "count": 500,
            "mean_ms": mean_ms,
            "p50_ms": mean_ms,
            "p99_ms": p99_ms,
            "max_ms": max_ms,
            "stddev_ms": std_ms,
            "max_at_s": 5.0,
        },
        "writes": {"planned": 200, "done": 200},
        "attach": {},
        "flusher_cpu_ms": None,
        "disk": {"read_ios": 500, "write_ios": 180, "write_ios_sync": 20},
        "series": {
            "reads": [[0.1, 0.5], [0.2, 1.5], [0.3, 3.0], [5.0, max_ms]],
            "disk_fields": ["t_s", "read_ios", "write_ios", "inflight_writes", "dirty_kb"],
            "disk": disk,
        },
    }
    if stat:
        trial["attach"] = {"stat": stat, "age_hist": AGE_HIST, "burst_hist": "0 0 1\n"}
        trial["flusher_cpu_ms"] = 12.0
    return trial


def build_tree(root, aipu_max=(100.0, 250.0), errors=None):
    """fifo94 with random (pu, aipu: 2 trials of 3), rewrite, db and overhead."""
    write_env(os.path.join(root, "env.txt"), ROOT_ENV)
    model = os.path.join(root, "fifo94")
    os.makedirs(model)
    write_env(os.path.join(model, "env.txt"), MODEL_ENV)
    write_json(os.path.join(model, "probe.json"), PROBE)
    rnd = os.path.join(model, "random")
    for n, mx in ((1, 2000.0), (2, 3000.0)):
        write_json(f"{rnd}/pu/trial{n}.json", random_trial(mx, 40.0 + n, 200.0, 900.0))
        write_writes(f"{rnd}/pu/trial{n}.writes.gz", [30 + 0.001 * i for i in range(100)])
    for n, mx, scanned in ((1, aipu_max[0], 1200), (2, aipu_max[1], 1300)):
        trial = random_trial(mx, 20.0 + n, 10.0, 50.0 * n, stat_text(scanned, 1000))
        write_json(f"{rnd}/aipu/trial{n}.json", trial)
        write_writes(f"{rnd}/aipu/trial{n}.writes.gz", [1.0, 1.01, 1.02, 2.0, 2.05])
    with open(f"{rnd}/aipu/trial3.json", "w") as f:
        f.write('{"label": "aipu", "reads": {')  # a run cut short: counted as missing
    if errors:
        with open(f"{rnd}/pu/trial1.json") as f:
            trial = json.load(f)
        trial["errors"] = errors
        write_json(f"{rnd}/pu/trial1.json", trial)
    for row in ("pu", "aipu"):
        trial = random_trial(
            500.0, 30.0, 50.0, 200.0, stat_text(90, 100) if row == "aipu" else None
        )
        trial["disk"] = {"read_ios": 400, "write_ios": 90 if row == "aipu" else 150}
        trial["disk"]["write_ios_sync"] = 10
        write_json(f"{model}/rewrite/{row}/trial1.json", trial)
    db = {
        "label": "aipu",
        "elapsed_s": 12.5,
        "work": {"transactions": 20000, "tps": 1600.0},
        "attach": {"stat": stat_text(500, 500)},
        "flusher_cpu_ms": 5.0,
        "sync_s": 0.3,
        "disk": {"read_ios": 10, "write_ios": 700, "write_ios_sync": 40},
    }
    write_json(f"{model}/db/aipu/trial1.json", db)
    for row, ops, mib in (("none", 500.0, 100), ("aipu", 450.0, 95)):
        write_json(
            f"{model}/overhead/{row}/trial1.json", {"work": {"files": 7500, "ops_per_s": ops}}
        )
        fio = {"jobs": [{"write": {"bw_bytes": mib * 2**20}}]}
        write_json(f"{model}/overhead/{row}/trial1.fio.json", fio, prefix="fio: note\n")


def run_main(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = report.main(args)
    return status, out.getvalue(), err.getvalue()


class TreeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def report(self, **kw):
        build_tree(self.root, **kw)
        status, out, err = run_main([self.root, "--no-plots"])
        with open(os.path.join(self.root, "summary.json")) as f:
            summary = json.load(f)
        with open(os.path.join(self.root, "summary.md")) as f:
            md = f.read()
        self.assertEqual(out, md)
        return status, summary, md, err

    def verdicts(self, summary):
        return {c["id"]: c["verdict"] for c in summary["claims"]}


class TablesTest(TreeTest):
    def test_random_aggregates(self):
        status, summary, md, _ = self.report()
        self.assertEqual(status, 0)
        cell = summary["models"]["fifo94"]["workloads"]["random"]
        self.assertEqual(list(cell), ["pu", "aipu"])
        aipu, pu = cell["aipu"], cell["pu"]
        self.assertEqual(aipu["max_ms"], 250.0)
        self.assertEqual(aipu["median_max_ms"], 175.0)
        self.assertEqual(pu["max_ms"], 3000.0)
        self.assertAlmostEqual(aipu["max_over_pu"], 250.0 / 3000.0, places=4)
        self.assertAlmostEqual(pu["max_over_pu"], 1.0)
        self.assertIsNone(aipu["linux_row"])
        self.assertAlmostEqual(aipu["mean_ms"], 21.5)
        self.assertEqual(aipu["p99_ms"], 75.0)
        self.assertEqual(aipu["reads"], 1000)
        self.assertEqual(aipu["disk_writes"], 180)
        self.assertAlmostEqual(aipu["aipu"]["scanned_per_written"], 2500 / 2000)
        self.assertIsNone(pu["aipu"])
        self.assertEqual(aipu["write_bursts"]["bursts"], 4)
        self.assertEqual(pu["write_bursts"]["max_pages"], 100)
        self.assertIn("| aipu | 2 (trial 3 missing) | 1000 | 21.5 | 10.0 | 75.0 | 250 |", md)
        self.assertIn("| 0.083 |", md)
        self.assertIn("1.250", md)

    def test_missing_trial_and_row(self):
        _, summary, md, err = self.report()
        cell = summary["models"]["fifo94"]["workloads"]["random"]
        self.assertEqual(cell["aipu"]["missing_trials"], [3])
        self.assertEqual(cell["pu"]["missing_trials"], [3])
        self.assertNotIn("kernel", cell)
        self.assertIn("trial3.json: unreadable", err)

    def test_rewrite_db_overhead(self):
        _, summary, md, _ = self.report()
        wl = summary["models"]["fifo94"]["workloads"]
        self.assertAlmostEqual(wl["rewrite"]["aipu"]["disk_writes_per_call"], 100 / 200)
        self.assertEqual(wl["rewrite"]["pu"]["pages_dirtied"], 200)
        self.assertEqual(wl["db"]["aipu"]["tps"], 1600.0)
        self.assertEqual(wl["db"]["aipu"]["sync_writes"], 40)
        over = wl["overhead"]
        self.assertAlmostEqual(over["aipu"]["seq_write_mib_s"], 95.0)
        self.assertAlmostEqual(over["aipu"]["seq_write_vs_none"], 0.95)
        self.assertAlmostEqual(over["aipu"]["files_vs_none"], 0.9)
        self.assertIn("| aipu | 1 | 95.0 | 0.950 | 450 | 0.900 |", md)

    def test_header_and_model_line(self):
        _, summary, md, _ = self.report()
        self.assertIn("kernel 6.1.0-test; QEMU 7.2.0; fio 3.33; commit abc1234", md)
        self.assertIn(
            "**fifo94**: a strict FIFO (nbdkit, one request at a time, 16 ms added to each), "
            "no bandwidth cap; guest scheduler none",
            md,
        )
        self.assertIn("read mean 18.2 ms, p99 19.5 ms; write mean 18.4 ms", md)
        self.assertEqual(summary["models"]["fifo94"]["probe"]["read"]["count"], 300)
        self.assertIn("not drawn (--no-plots)", md)


class ClaimsTest(TreeTest):
    def test_holds_and_does_not_hold(self):
        _, summary, md, _ = self.report()
        v = self.verdicts(summary)
        self.assertEqual(v["max_read_vs_pu"], "HOLDS")
        self.assertEqual(v["max_read_vs_linux"], "NOT CHECKED")
        self.assertEqual(v["scanned_per_written"], "DOES NOT HOLD")
        self.assertIn("**HOLDS**", md)
        self.assertIn("2500 entries scanned / 2000 pages written = 1.250", md)

    def test_max_read_does_not_hold(self):
        _, summary, _, _ = self.report(aipu_max=(100.0, 400.0))
        claim = summary["claims"][0]
        self.assertEqual(claim["verdict"], "DOES NOT HOLD")
        self.assertAlmostEqual(claim["value"], 400.0 / 3000.0, places=4)

    def test_linux_baseline_falls_back_to_none(self):
        cell = {"aipu": {"max_ms": 10.0}, "none": {"max_ms": 200.0}}
        summary = {"models": {"fifo94": {"workloads": {"random": cell}}}}
        c = report.claims(summary)[1]
        self.assertEqual((c["verdict"], c["other_row"]), ("HOLDS", "none"))


class StatusTest(TreeTest):
    def test_errors_exit_1_but_write(self):
        status, summary, md, err = self.report(errors=["reader: boom"])
        self.assertEqual(status, 1)
        self.assertIn("fifo94/random/pu/trial1: reader: boom", summary["errors"])
        self.assertIn("## Errors", md)

    def test_empty_dir(self):
        status, _, err = run_main([self.root, "--no-plots"])
        self.assertEqual(status, 1)
        self.assertIn("no result file", err)
        self.assertTrue(os.path.exists(os.path.join(self.root, "summary.md")))


class FunctionsTest(unittest.TestCase):
    def test_burst_gap_rule(self):
        reqs = [(0.25, 2), (0.0, 1), (0.05, 1), (0.149, 1), (1.0, 4), (1.1, 1)]
        # 0.149 -> 0.25 is 101 ms: a new burst; exactly 100 ms is one too.
        self.assertEqual(report.burst_sizes(reqs, gap_s=0.1), [3, 2, 4, 1])
        # The default gap keeps a flush-all's trickle (0.3 s apart) whole
        # and splits once-a-second batches.
        trickle = [(0.0, 256), (0.3, 8), (0.6, 8), (1.6, 20), (2.6, 20)]
        self.assertEqual(report.burst_sizes(trickle), [272, 20, 20])
        self.assertEqual(report.burst_sizes([]), [])
        xs, ys = report.cumulative_pages([3, 1, 4])
        self.assertEqual(xs, [1, 3, 4])
        self.assertEqual(ys, [1 / 8, 4 / 8, 1.0])
        self.assertEqual(report.weighted_median([3, 1, 4]), 3)

    def test_markers_cut_the_trace_to_the_run(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "trial1.writes.gz")
            with gzip.open(path, "wt") as f:
                f.write("0.5 100 8 kworker/u4:1\n")  # before the run: left out
                f.write(f"1.0 4000 8 {report.MARKER}\n")
                f.write("3.0 200 16 aipu\n")
                f.write(f"41.0 4000 8 {report.MARKER}\n")
                f.write("42.0 300 8 python3\n")  # the final sync: left out
            self.assertEqual(report.read_writes(path), [(2.0, 2.0)])
            with gzip.open(path, "wt") as f:
                f.write("0.5 100 8 kworker/u4:1\n3.0 200 16 aipu\n")
            self.assertEqual(report.read_writes(path), [(0.5, 1.0), (3.0, 2.0)])

    def test_steady_scan_from_the_snapshot(self):
        def trial(snap, end):
            return {
                "attach": {"stat": stat_text(*end)},
                "attach_at": {"t_s": 30.0, "files": {"stat": stat_text(*snap)}},
            }

        # 30 passes found nothing aged (30 entries, 0 pages), then 10
        # passes wrote 200 pages scanning 210 entries.
        agg = report.aipu_aggregates([trial((30, 0), (240, 200)), trial((30, 0), (240, 200))])
        self.assertAlmostEqual(agg["scanned_per_written"], 420 / 400)
        self.assertAlmostEqual(agg["scanned_per_written_total"], 480 / 400)
        self.assertEqual(agg["scan_from_s"], 30.0)
        # One trial without the snapshot: the whole runs' ratio.
        agg = report.aipu_aggregates(
            [trial((30, 0), (240, 200)), {"attach": {"stat": stat_text(240, 200)}}]
        )
        self.assertAlmostEqual(agg["scanned_per_written"], 480 / 400)
        self.assertIsNone(agg["scan_from_s"])

    def test_log2_buckets(self):
        cases = {0.0: 0, 0.99: 0, 1.0: 1, 1.99: 1, 2.0: 2, 3.9: 2, 4.0: 3, 1000.0: 10}
        for ms, k in cases.items():
            self.assertEqual(report.log2_bucket(ms), k, ms)
        self.assertEqual(report.bucket_label(0), "<1")
        self.assertEqual(report.bucket_label(10), "512-1024")
        self.assertEqual(report.log2_histogram([0.5, 1.5, 1.6, 5.0]), [1, 2, 0, 1])

    def test_row_names(self):
        self.assertEqual(
            report.row_file("aipu:write_alloc=purge,pace=1"), "aipu+write_alloc=purge+pace=1"
        )
        self.assertEqual(
            report.row_name("aipu+write_alloc=purge+pace=1"), "aipu:write_alloc=purge,pace=1"
        )
        self.assertEqual(
            report.ordered({"ssd", "x", "fifo94", "a"}, report.MODEL_ORDER),
            ["fifo94", "ssd", "a", "x"],
        )

    def test_per_second(self):
        samples = [[0.0, 0, 0], [0.5, 3, 1], [1.0, 5, 1], [1.5, 6, 4]]
        self.assertEqual(
            report.per_second(samples, ["t_s", "read_ios", "write_ios"]), ([3, 3], [1, 3])
        )

    def test_host_disk_line(self):
        menv = {
            "disk": "host:/dev/sdb",
            "host_mode": "1",
            "device_model": "ATA WDC WD10",
            "device_size_bytes": str(1000 << 30),
            "rotational": "1",
            "scheduler": "mq-deadline",
            "rate_auto": "1",
            "rate_per_s": "44",
        }
        line = report.model_line("host", menv, PROBE)
        self.assertIn("the real disk /dev/sdb on the machine itself, no VM", line)
        self.assertIn("ATA WDC WD10, 1000 GiB, rotational", line)
        self.assertIn("; scheduler mq-deadline", line)
        self.assertNotIn("guest scheduler", line)
        self.assertIn("44 pages/s (chosen from the probe", report.run_line(menv))


def demo_run(max_ms, before_ms=30.0, at_s=35.0):
    """A bench/workload.py result with a quiet read before 29 s and its worst at AT_S."""
    return {
        "reads": {"max_ms": max_ms, "max_at_s": at_s},
        "series": {"reads": [[5.0, before_ms], [at_s, max_ms]]},
    }


class DemoClaimsTest(unittest.TestCase):
    """bench/summarize.py's claims for the demo's disk models."""

    def verdicts(self, runs, model):
        summary = {}
        text = summarize.claim(runs, summary, model)
        return [c["verdict"] for c in summary["claims"]["checks"]], text

    def test_fifo94_holds(self):
        runs = {
            "kernel": demo_run(4500),
            "pu": demo_run(4200),
            "aipu": demo_run(70),
            "aipu:pace=0": demo_run(370),
        }
        verdicts, text = self.verdicts(runs, "fifo94")
        self.assertEqual(verdicts, ["HOLDS", "HOLDS", "HOLDS"])
        self.assertIn("here 210 ms", text)  # 0.05 x pu's 4200

    def test_fifo94_fails(self):
        # The model did not show seconds, and aipu's worst read is too large.
        runs = {"kernel": demo_run(300), "pu": demo_run(4200), "aipu": demo_run(100, before_ms=5)}
        verdicts, text = self.verdicts(runs, "fifo94")
        self.assertEqual(verdicts, ["DOES NOT HOLD", "DOES NOT HOLD"])
        self.assertIn("no row aipu:pace=0", text)

    def test_not_decided_when_noise_exceeds_the_limit(self):
        runs = {
            "kernel": demo_run(4000),
            "pu": demo_run(4000),
            "aipu": demo_run(300, before_ms=250),
        }
        verdicts, _ = self.verdicts(runs, "fifo94")
        self.assertEqual(verdicts[1], "NOT DECIDED")

    def test_throttle_keeps_its_quarter(self):
        runs = {"kernel": demo_run(300), "pu": demo_run(300), "aipu": demo_run(70)}
        verdicts, text = self.verdicts(runs, "throttle")
        self.assertEqual(verdicts, ["HOLDS"])
        self.assertNotIn("paper's effect", text)

    def test_dispatched_per_second(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "aipu.writes.gz")
            with gzip.open(path, "wt") as f:
                f.write("9.9 100 8 @marker\n10.2 8 8 aipu\n10.9 24 8 aipu\n12.5 40 8 aipu\n")
                f.write("12.6 100 8 @marker\n13.0 56 8 sync\n")
            # Timed from the first marker; the write after the second is the sync's.
            self.assertEqual(demo_plot.dispatched_per_second(path, 4), [1, 1, 1, 0])
            self.assertIsNone(demo_plot.dispatched_per_second(os.path.join(d, "none.gz"), 4))


@unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed for this python")
class PlotTest(TreeTest):
    def test_plots_written(self):
        build_tree(self.root)
        status, out, _ = run_main([self.root])
        self.assertEqual(status, 0)
        names = [
            f"fifo94-random-{k}.png" for k in ("mean-std", "hist", "bursts", "timeline", "age")
        ]
        names += ["fifo94-rewrite-writes.png", "fifo94-db-table.png", "fifo94-overhead.png"]
        for name in names:
            path = os.path.join(self.root, "plots", name)
            self.assertTrue(os.path.exists(path), name)
            self.assertGreater(os.path.getsize(path), 1000, name)
            self.assertIn(f"plots/{name}", out)


# Two probe calls on two CPUs, interleaved as ftrace prints them, and
# __rcu_read_lock (the tracer's cost: 2 us) beneath each.
FGRAPH_TRACE = """\
# tracer: function_graph
#
 0)               |  probe_dirty_folio [aipu]() {
 1)               |  probe_dirty_folio [aipu]() {
 0)   2.000 us    |    __rcu_read_lock();
 0)               |    track_pages [aipu]() {
 1)   2.000 us    |    __rcu_read_lock();
 0)   6.000 us    |      aipu_run_alloc [aipu]();
 1)   9.000 us    |    track_pages [aipu]();
 0) + 12.000 us   |    }
 0) + 30.000 us   |  }
 1) + 20.000 us   |  }
"""


class FgraphTest(unittest.TestCase):
    def test_paths_calls_and_tracer_cost(self):
        acc = fgraph.parse(FGRAPH_TRACE.splitlines())
        probe = ("probe_dirty_folio",)
        self.assertEqual(acc[probe][:2], [2, 50.0])
        # Beneath the two probes: 2 + 2 traced calls on CPU 0, 2 on CPU 1.
        self.assertEqual(acc[probe][2], 5)
        self.assertEqual(acc[probe + ("track_pages",)], [2, 21.0, 1])
        self.assertEqual(acc[probe + ("track_pages", "aipu_run_alloc")], [1, 6.0, 0])
        order = fgraph.tree_order(acc)
        self.assertEqual(order[0], probe)
        self.assertEqual(order[1], probe + ("track_pages",))

    def test_table_subtracts_the_tracer(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(FGRAPH_TRACE)
        self.addCleanup(os.unlink, f.name)
        out = io.StringIO()
        with (
            contextlib.redirect_stdout(out),
            unittest.mock.patch.object(sys, "argv", ["fgraph.py", f.name]),
        ):
            fgraph.main()
        rows = {
            r.split("|")[1].strip(): r for r in out.getvalue().splitlines() if r.startswith("| ")
        }
        self.assertIn("tracer cost 2.00 us", out.getvalue())
        # track_pages: mean 10.5 us, less 2 us for itself and 0.5 callee.
        self.assertIn("| 10.50 | 7.50 |", rows[". track_pages"])
        # probe: mean 25 us, less 2 us x (1 + 5/2).
        self.assertIn("| 25.00 | 18.00 |", rows["probe_dirty_folio"])

    def test_no_trace_is_an_error(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("# tracer: nop\n")
        self.addCleanup(os.unlink, f.name)
        with unittest.mock.patch.object(sys, "argv", ["fgraph.py", f.name]):
            with self.assertRaises(SystemExit) as cm:
                fgraph.main()
        self.assertIn("no function_graph lines", str(cm.exception.code))


if __name__ == "__main__":
    unittest.main()
