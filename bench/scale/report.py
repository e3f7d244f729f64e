#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Plots and key figures for one run of the scale benchmark (bench/scale/).

Usage: report.py RESULTS_DIR [--no-plots]
       report.py RESULTS_DIR --prose

RESULTS_DIR holds what bench/scale/scale wrote there: noise.json, pages.json,
files.json, threads.json, holds.json, evict.json, steady.json, memory.json,
criterion.json and meta.json (any may be missing when scale ran with --only).
Writes into RESULTS_DIR/plots/:

  pages.png    ns per transition against pages dirtied (median solid, p99
               dashed), one line per pattern, the per-file cap, log axes
  files.png    ns per transition against tracked files, log axes
  holds.png    the flusher's longest holds against the backlog (p99.9 and
               max of phase 1, take, hand-back, end of pass, rmmod, probe),
               one panel per backlog, the 50 us line and the control's
               (a fixed 10 us computation) p99.9 and max, log axes
  evict.png    eviction of one file: p99.9 and max hold against its pages
  threads.png  transitions a second, one thread against two
  steady.png   files phase 1 looks at per extent written against the files,
               one line per set-up, the 1.05 target

and prints the key figures as markdown on stdout.

With --prose it prints RESULTS_DIR/tables.md (scale's headings and tables)
with the paragraph that explains each table in place, its numbers read from
the JSON (PROSE below): the tables part of summary.md.  The prose is here
only; scale prints none.
"""

import argparse
import json
import sys
from pathlib import Path

TARGET_US = 50  # issue 14: the longest interrupts-off section, host CPU
STEADY_TARGET = 1.05  # issue 14: files looked at per extent written
NAMES = (
    "meta",
    "noise",
    "pages",
    "files",
    "threads",
    "holds",
    "evict",
    "steady",
    "memory",
    "criterion",
    "repeat",
    "criterion_repeat",
    "first_touch",
)
HOLDS = (
    ("scan", "phase 1"),
    ("take", "take"),
    ("handback", "hand-back"),
    ("end_pass", "end of pass"),
    ("forget", "rmmod"),
    ("probe", "probe"),
)


def load(d, name):
    p = d / f"{name}.json"
    if not p.exists():
        return None
    with p.open() as f:
        return json.load(f)


def us(ns):
    return ns / 1000.0


def median(v):
    """The lower median, as stats.c's median_of()."""
    return sorted(v)[(len(v) - 1) // 2]


def control(data):
    """The fixed ~10 us computation's worst p99.9 and max in ns, or None."""
    noise = data.get("noise")
    rows = [r for r in noise["rows"] if r["target_ns"] >= 10000] if noise else []
    if not rows:
        return None
    return max(r["hold"]["p999"] for r in rows), max(r["hold"]["max"] for r in rows)


def pair(h):
    """'p99.9 / max' of one timed set, in us."""
    return f"{us(h['p999']):.1f} / {us(h['max']):.1f} us"


def key_pages(data, out):
    pages = data.get("pages")
    if not pages:
        return
    for r in pages["rows"]:
        if r["pattern"] in ("random_one", "random_spread") and r["n"] in (1000, 1000000, 10000000):
            out.append(
                f"- {r['pattern_name']}, N = {r['n']:,}: median {r['ns']['median']:.0f} ns, "
                f"p99 {r['ns']['p99']:.0f} ns, p99.9 {r['ns']['p999']:.0f} ns a transition; "
                f"{r['pages_tracked']:,} pages tracked one by one, "
                f"{r['pages_by_fallback']:,} bounded by fallback ({r['fallbacks']} fallbacks, "
                f"{r['files']} files)"
            )


def key_files(data, out):
    files = data.get("files")
    if not files:
        return
    for r in files["rows"]:
        if r["files"] in (1, 100000, 1000000):
            out.append(
                f"- {r['files']:,} files: median {r['ns']['median']:.0f} ns, p99 "
                f"{r['ns']['p99']:.0f} ns a transition (a new page of a random file); "
                f"first page of a file median {r['create_ns']['median']:.0f} ns"
            )


def key_threads(data, out):
    thr = data.get("threads")
    if not thr:
        return
    parts = [
        f"{r['name']} {r['per_s_median'] / 1e6:.2f} M/s "
        f"({median(r['cpu_ns_per_transition']):.0f} CPU-ns a transition, "
        f"{median(r['cpus_busy']):.2f} CPUs busy)"
        for r in thr["rows"]
    ]
    out.append("- transitions a second (median of rounds): " + "; ".join(parts))


def key_holds(data, out):
    holds = data.get("holds")
    if holds:
        for r in holds["rows"]:
            if r["n"] < 1000000:
                continue
            parts = [f"{name} {pair(r[k])}" for k, name in HOLDS]
            out.append(
                f"- holds (p99.9 / max), backlog {r['n']:,} pages, {r['backlog_name']}: "
                + ", ".join(parts)
                + f"; phase 1 in one hold {us(median(r['one_hold_cpu'])):,.0f} us CPU"
            )
            if "dirty_end_pass_longest_cpu" in r:
                out.append(
                    f"- the same backlog, every page still dirty after its write: "
                    f"hand-back {pair(r['dirty_handback'])}, **end of pass: longest hold "
                    f"{us(r['dirty_end_pass_longest_wall']):,.0f} us wall, "
                    f"{us(r['dirty_end_pass_longest_cpu']):,.0f} us CPU** (a file's retries "
                    f"count against the hold's budget)"
                )
    if holds and holds.get("cut_slot"):
        parts = [
            f"{r['files']:,} files {us(median(r['last_hold'])):,.1f} us" for r in holds["cut_slot"]
        ]
        out.append(
            "- phase 1 with its cutoff inside a slot, the hold that finishes the slot "
            "(the not-due files spliced back; median of rounds): " + ", ".join(parts)
        )
    evict = data.get("evict")
    if evict:
        for r in evict["rows"]:
            if r["n"] == 1000000:
                out.append(
                    f"- eviction of one file, {r['pattern_name']}, N = {r['n']:,} "
                    f"({r['pages_tracked']:,} pages tracked, {r['objects']:,} objects): "
                    f"holds {pair(r['batched'])}; in one hold "
                    f"{us(median(r['one_hold_cpu'])):,.0f} us CPU"
                )
                for k, what in (("shrink", "the shrinker"), ("park", "an umount's park")):
                    if k in r:
                        out.append(f"- the same file freed by {what}: holds {pair(r[k])}")


def key_criterion_repeat(data, out):
    c = data.get("criterion_repeat")
    if not c:
        return
    yes = {True: "met", False: "NOT met"}
    out.append(
        f"- **criterion by each hold's least of {c['repeats']} readings over the same "
        f"backlog (table 8): {yes[c['met']]}** ({us(c['worst_least_ns']):.1f} us, "
        f"{c['worst_least_what']}); control: {us(c['control_10us_least_max_ns']):.1f} us "
        f"for 10 us of work, {us(c['control_40us_least_max_ns']):.1f} us for 40 us; by the "
        f"holds' medians the worst is {us(c['worst_median_ns']):.1f} us "
        f"({c['worst_median_what']})"
    )


def key_first_touch(data, out):
    f = data.get("first_touch")
    if not f:
        return
    rows = f["rows"]
    over = ", ".join(str(r["over_20us"]) for r in rows)
    medians = ", ".join("%.1f" % us(r["median"]) for r in rows)
    worst = max(us(r["max"]) for r in rows)
    out.append(
        f"- the host's first touch of memory idle {rows[0]['idle_s']:.1f} s (table 0b, not "
        f"aipu's code): {over} of {rows[0]['pages']} 2-MiB pages over 20 us, medians "
        f"{medians} us, max {worst:,.0f} us"
    )


def key_criterion(data, out):
    key_first_touch(data, out)
    key_criterion_repeat(data, out)
    c = data.get("criterion")
    if not c:
        return
    yes = {True: "met", False: "NOT met"}
    noise = (
        "the max is disturbed by host noise (the control's own max is over 50 us)"
        if c["max_disturbed_by_noise"]
        else "the control's max stays under 50 us"
    )
    out.append(
        f"- **criterion, 1,000,000 pages tracked, longest interrupts-off section <= 50 us: "
        f"by p99.9 {yes[c['met_p999']]}** ({us(c['worst_p999_ns']):.1f} us, "
        f"{c['worst_p999_what']}); **by max {yes[c['met_max']]}** "
        f"({us(c['worst_max_ns']):.1f} us, {c['worst_max_what']}); control (10 us of work): "
        f"p99.9 {us(c['control_p999_ns']):.1f} us, max {us(c['control_max_ns']):.1f} us: "
        f"{noise}; for reference the worst p99 is {us(c['worst_p99_ns']):.1f} us "
        f"({c['worst_p99_what']}; the control's p99 {us(c['control_p99_ns']):.1f} us)"
    )
    if c.get("cut_slot_10k_max_ns"):
        out.append(
            f"- not counted above: phase 1's hold that finishes a slot its cutoff cuts, "
            f"{us(c['cut_slot_10k_max_ns']):,.1f} us with 10,000 files in the slot, "
            f"{us(c['cut_slot_100k_max_ns']):,.1f} us with 100,000"
        )
    if c.get("dirty_end_pass_cpu_ns"):
        out.append(
            f"- not counted above: a pass that puts every page back, its end of pass holds "
            f"the lock {us(c['dirty_end_pass_wall_ns']):,.0f} us (wall), "
            f"{us(c['dirty_end_pass_cpu_ns']):,.0f} us (CPU)"
        )


def key_memory(data, out):
    mem = data.get("memory")
    if not mem:
        return
    want = (
        "random pages, one file, N = 100,000",
        "random pages, one file, N = 1,000,000",
        "random pages, files of <= 262,144 pages, N = 10,000,000",
        "random pages, sparse (a 512-page live chunk each), N = 100,000",
        "sequential, 1,024 pages a jiffy, N = 1,000,000",
        "sequential, a page a jiffy, N = 1,000,000",
        "files of 4 pages, in address order, N = 100,000",
        "files of 4 pages, in address order, N = 1,000,000",
    )
    for r in mem["rows"]:
        if r["state"] in want:
            out.append(
                f"- bytes a page, {r['state']}: {r['bytes_per_tracked_page_queue']:.2f} B "
                f"a tracked page for the queue, {r['bytes_per_tracked_page']:.2f} B with "
                f"trackers, {r['bytes_per_dirtied_page']:.2f} B a dirtied page"
            )


def key_steady(data, out):
    st = data.get("steady")
    if not st:
        return
    rows = [r for r in st["rows"] if r["config"] == "module"]
    if rows:
        parts = [f"{r['files']:,} files {r['per_extent_written']:.3f}" for r in rows]
        verdict = (
            "MORE than the 1.05 target"
            if st["module_worst"] > STEADY_TARGET
            else "within the 1.05 target"
        )
        out.append(
            "- steady state, files phase 1 looks at per extent written (the module's "
            "slots, paced): " + ", ".join(parts) + f": worst {st['module_worst']:.3f}, {verdict}"
        )
    others = {}
    for r in st["rows"]:
        if r["config"] != "module":
            others.setdefault(r["name"], []).append(r["per_extent_written"])
    for name, v in others.items():
        out.append(f"- steady state, {name}: worst {max(v):.3f}")


def key_figures(data):
    """Markdown lines: the numbers the issue asks for, from the JSON."""
    out = ["## Key figures", ""]
    noise = data.get("noise")
    if noise:
        parts = [
            f"{r['when']}, {r['target_ns'] / 1000:.0f} us of work: p99.9 "
            f"{us(r['hold']['p999']):.1f} us, max {us(r['hold']['max']):.1f} us"
            for r in noise["rows"]
        ]
        out.append("- the host's noise (the control, table 0): " + "; ".join(parts))
    for f in (key_pages, key_files, key_threads, key_holds, key_criterion, key_memory, key_steady):
        f(data, out)
    return out


# ---- the prose around scale's tables (summary.md) ----
#
# scale prints the headings and the tables (tables.md); what each table
# measures and how is said here, with the numbers it needs read from the
# run's JSON (meta.json: the constants and the mode).  prose_tables() puts
# each paragraph where it belongs: after its heading, or before the line
# that opens the part of a section it explains.


def prose_intro(d):
    m = d["meta"]
    return (
        f"Constants read from src/ at build time: AIPU_SCAN_BATCH = {m['scan_batch']} "
        f"(src/flusher.c), a table bucket per {m['table_pages_per_bucket']} pages of "
        f"memory, 2^{m['table_min_bits']} to 2^{m['table_max_bits']} (src/mapping.c), "
        f"AIPU_SLOT_JIFFIES = {m['slot_jiffies']} at HZ = {m['hz']} (src/dev.c), "
        f"max_age_ms = {m['max_age_ms']} and period_ms = {m['period_ms']} "
        f"(include/aipu_knobs.h); from the headers: AIPU_DRAIN_BATCH = {m['kill_batch']}, "
        f"AIPU_HANDBACK_MAX = {m['handback_max']}, AIPU_HANDBACK_PAGES = "
        f"{m['handback_pages']}, AIPU_QUEUE_BYTES_MAX = {m['bytes_max']}, "
        f"AIPU_QUEUE_SLOTS = {m['queue_slots']}, AIPU_FLOG_TAKE_ENTRIES = "
        f"{m['take_entries']}, AIPU_FLOG_TAKE_PAGES = {m['take_pages']}. Mode: "
        f"{m['mode']}, {m['rounds']} rounds. A hold's two clock reads (clock_gettime() "
        f"here, local_clock() in aipu_dev_lock()/aipu_dev_unlock()) back to back: "
        f"{m['timer_ns']:.0f} ns (median), included in every hold and transition below."
        "\n\n"
        f"The tracker table has the kernel's layout and size ({m['table_buckets']} buckets "
        "for this host's memory) but not its code (no RCU; trackers freed at once). Queue "
        "objects and trackers come from per-CPU free lists mapped and touched before timing "
        "(the slab's fast path). A batch or hold during which the thread was switched out or "
        'took a page fault ("disturbed", read with getrusage() outside the timed window) is '
        "counted apart and left out of percentiles and maxima: the kernel holds the lock with "
        "interrupts off. Interrupts and the hypervisor's steal are not detected: table 0 "
        "measures them."
    )


def prose_noise(d):
    return (
        "Before and after the measurements: holds of the lock around a fixed chain of "
        "dependent multiplies (no memory traffic), calibrated to about 1 µs and 10 µs, timed "
        "and filtered exactly as the real holds (disturbed ones left out). Their spread is the "
        "host's (the hypervisor's steal, interrupts, the other core's tenant), not aipu's: a "
        "real hold's maximum no higher than these maxima says nothing about the code. Holds in "
        'µs; "max (rounds)": the median of four quarters\' maxima.'
    )


def prose_first_touch(d):
    mib = d["first_touch"]["rows"][0]["pages"] * 2
    return (
        f"A region of {mib} MiB in 2-MiB pages (MADV_HUGEPAGE) written, left untouched while "
        "the thread spins for the idle time, then one cache line of each 2-MiB page read, each "
        "read timed; three rounds. Not aipu's code: what a hold pays, whatever its code, for "
        "the first touch of memory idle that long (a phase's first hold touches objects idle "
        "since their pages were dirtied). µs."
    )


def prose_pages(d):
    m, p = d["meta"], d["pages"]
    return (
        "The probe's part of a transition, as src/hook.c does it: the tracker looked up in the "
        "table before the lock, the lock taken and the clock read (aipu_dev_lock()), the "
        "tracker checked (aipu_queue_get() if the file has none), aipu_queue_pages() for one "
        f"page, the clock read and the lock dropped. Batches of {p['batch']} transitions timed "
        f"with clock_gettime and divided by {p['batch']}; median, p99 and p99.9 over the "
        "batches of the second half of each fill (the file holds N/2 to N pages when they "
        f"run), pooled over {p['rounds']} rounds; a fill is repeated until at least "
        f"{m['min_batches']} batches are timed. A new jiffy every {m['jiffy_pages']} "
        'transitions (sequential, a page a jiffy: every page). "Random pages, one file": a '
        'file of N pages, each dirtied once in random order; "files of <= 262,144 pages": the '
        "same N pages over N/262,144 files, picked at random, so that no file reaches the cap; "
        '"sparse": random pages anywhere in a 2^32-page file, each in a live chunk of its own '
        f"(the live set's worst case). \"max batch\": the longest batch of {p['batch']} "
        "transitions not disturbed, an upper bound of the longest single probe. A file whose "
        f"log holds AIPU_QUEUE_BYTES_MAX = {p['bytes_max']} bytes (about "
        f"{m['bytes_max_entries']} single-page entries) is bounded as a whole from then on "
        "(its whole-file entry, one fallback), so its later pages are not tracked one by one: "
        '"pages tracked one by one" are those in the files\' logs, "pages bounded by '
        'fallback" the rest, at the end of the last fill.'
    )


def prose_files(d):
    m, f = d["meta"], d["files"]
    return (
        'F files on one device, each given its page 0 first ("first page of a file": its '
        f"tracker is made and inserted in the table), then {f['transitions']:,} transitions, "
        'each a new page of a file picked at random ("new page, random file"); batches of '
        f"{f['batch']}, median, p99 and p99.9 over batches, {f['fills_per_round']} fill(s) "
        f"per round, {f['rounds']} rounds. The table has the kernel's layout and size for "
        f"this host's memory: {f['table_buckets']} buckets (src/mapping.c: one per "
        f"{m['table_pages_per_bucket']} pages of memory, 2^{m['table_min_bits']} to "
        f"2^{m['table_max_bits']}), so past about one file a bucket its chains grow."
    )


def prose_threads(d):
    t = d["threads"]
    return (
        f"Each thread dirties {t['transitions_per_thread']:,} new pages, each of a random "
        f"file among its own {t['files_per_thread']} (trackers made before the clock starts, "
        "so the table is only read; each thread allocates from its own per-CPU caches); total "
        "transitions per second from the start barrier to the last thread's end; "
        f"{t['rounds']} rounds, the three set-ups taken in turn within a round. \"CPU ns per "
        "transition\": the threads' CPU time (CLOCK_THREAD_CPUTIME_ID) per transition, and "
        '"CPUs busy": their CPU time over the wall time, both medians of rounds: on a shared '
        "host the wall-clock rate also measures how much CPU the threads got. Batch figures: "
        f"ns per transition per batch of {t['batch']} (wall), pooled over threads and rounds. "
        "Files already queued take only their own lock (the probe's fast path); both set-ups "
        "share nothing but the table, read. The host has 2 cores, shared with other work; a "
        "pthread spinlock stands for the kernel's raw spinlock, but a preempted holder keeps "
        "the other thread spinning, which interrupts-off holds never do."
    )


def prose_holds(d):
    m, h = d["meta"], d["holds"]
    return (
        'N pages dirtied on one device ("probe": each transition\'s hold of the lock while '
        "the backlog is made, timed one by one), all of them then due, and one flusher pass as "
        "src/flusher.c runs it: phase 1 (aipu_queue_scan()) with a budget of AIPU_SCAN_BATCH = "
        f"{h['scan_batch']} files a hold; phase 2 takes (aipu_queue_take(), a hold each; a "
        f"batch is up to AIPU_FLOG_TAKE_ENTRIES = {m['take_entries']} entries and "
        f"AIPU_FLOG_TAKE_PAGES = {m['take_pages']} pages) and hand-backs "
        f"(aipu_queue_handback() for at most AIPU_HANDBACK_MAX = {h['handback_max']} "
        f"stretches or AIPU_HANDBACK_PAGES = {h['handback_pages']} pages a hold, then "
        "aipu_queue_put() in a hold; every page written, so the files end empty and are "
        f"freed); the end of the pass (aipu_queue_end_pass(), {h['scan_batch']} files a "
        "hold). Then the same backlog made again, phase 1 in one hold with no budget (for "
        "contrast: its wall time, least of the rounds, and CPU time, median; not what the "
        "module does), and rmmod's teardown (aipu_mapping_forget(): aipu_queue_kill() of "
        f"every file, AIPU_DRAIN_BATCH = {h['kill_batch']} objects a hold). {h['rounds']} "
        "rounds. Backlogs: random pages over files of at most 262,144 pages (few files, long "
        "logs), and files of 4 pages written whole (N/4 files: phase 1's worst), with their "
        "trackers, segments and live chunks in address order or handed out in random address "
        'order ("scattered", a slab after long use). For the first backlog a last pass finds '
        "every page still dirty after its write (policy kernel, or pages locked or under "
        "writeback) and puts it back: its hand-back and end of pass (aipu_flog_end_pass() "
        "moves a file's retries within the hold's budget). Cells: p99.9 / max in µs (phase 1: "
        "median / p99 / p99.9 / max), disturbed holds left out; the constants are read from "
        "src/ at build time."
    )


def prose_oldest(d):
    return (
        "stat's read of a device's oldest dirty time (aipu_queue_oldest(), a hold of the "
        "device's lock per device read)."
    )


def prose_cut_slot(d):
    h = d["holds"]
    return (
        "Phase 1 when its cutoff falls inside a slot (the backlogs above have every page due, "
        "so the cutoff is past every slot): N files of one page each, dirtied evenly over one "
        f"slot of AIPU_SLOT_JIFFIES = {h['cut_slot'][0]['slot_jiffies']} jiffies "
        "(src/dev.c), the cutoff at the slot's middle, phase 1 in holds of AIPU_SCAN_BATCH = "
        f"{h['scan_batch']} files. The due half moves to the due list a budget a hold; the "
        "hold that finishes the slot puts every file it looked at and left (the not-due half, "
        "on wheel.c's seen list) back into the slot at once. Trackers in address order. "
        f"{h['rounds']} rounds."
    )


def prose_evict(d):
    e = d["evict"]
    return (
        "One file, N pages dirtied in it (random pages of an N-page file, or sparse: a live "
        "chunk each; past AIPU_QUEUE_BYTES_MAX the file is bounded as a whole and its queue "
        "stops growing), then evicted as aipu_mapping_kill() does it: aipu_queue_kill() with "
        f"AIPU_DRAIN_BATCH = {e['kill_batch']} objects a hold until it reports done, each "
        f"hold timed. {e['rounds'] * 2} evictions batched and, for contrast, {e['rounds']} "
        'in one hold (no budget: wall time least, CPU time median). "objects": segments, '
        "live chunks and moved entries the file held."
    )


def prose_freers(d):
    e = d["evict"]
    return (
        "The same files freed by the shrinker (aipu_queue_degrade(), src/shrink.c) and by the "
        "park of a file an umount holds (aipu_queue_park(), src/flusher.c), AIPU_DRAIN_BATCH = "
        f"{e['kill_batch']} objects a hold as eviction, each called again while it frees its "
        f"whole budget, every hold timed; {e['rounds']} rounds each."
    )


def prose_steady(d):
    m, s = d["meta"], d["steady"]
    rate, hz = s["rate_per_jiffy"], s["hz"]
    return (
        f"F files on one device, {rate} new random pages a jiffy ({rate * hz} a second at "
        f'HZ = {hz}), each of a file picked at random ("hot": file = F x u^3, u uniform, so a '
        f"few files get most pages); the flusher's pass every period_ms = {m['period_ms']} ms "
        f"({s['period_jiffies']} jiffies) on a fixed grid, as src/flusher.c runs it under "
        f"policy aipu with max_age_ms = {m['max_age_ms']} ({s['max_age_jiffies']} jiffies; "
        "both defaults read from include/aipu_knobs.h): phase 1 with a cutoff of max_age_ms "
        "back (paced: a period later, the module's default), phase 2 taking each due file as "
        "it comes due (every page written), the end of the pass. The first max_age_ms and 4 "
        f"periods fill the queue; then {m['steady_periods']} periods are counted. \"looked "
        'at": files phase 1 visited (entries_scanned, the budget it spent); "extents '
        'written": the merged extents of the batches, what the flusher writes; '
        "aipu_flog_take() looks at no entry it does not take here (nothing is stale). The "
        f"module's slots: AIPU_SLOT_JIFFIES = {s['slot_jiffies']} jiffies (src/dev.c), "
        f"{m['queue_slots']} of them. The other widths are for contrast, not what the module "
        "uses. Issue 14's target: at most 1.05 looked at per extent written."
    )


def prose_memory(d):
    m, mem = d["meta"], d["memory"]
    z = mem["sizes"]
    return (
        "Bytes = the objects the queue holds x their sizes: log segments of 64, 512 and 4,096 "
        "B (the 4,096 column also counts a file's live-bit directory, struct aipu_live_dir, "
        f"from the same cache); live chunks of {z['live_chunk']} B (struct aipu_live_chunk, "
        f"{m['live_chunk_pages']} pages each); moved entries {z['moved']} B; retries "
        f"{z['retry']} B; trackers as the kernel allocates them, {z['tracker']} B (struct "
        f"aipu_file {mem['sizeof_file']} B + hash node + rcu_head, struct aipu_mapping). "
        "Divided by the pages tracked one by one (in the logs) and by the pages dirtied (they "
        "differ once a file is bounded as a whole). Not counted: slab rounding and slab pages, "
        "memcg's per-object pointer (SLAB_ACCOUNT), the table's buckets (8 B each, fixed at "
        "load). States at the end of the last fill of tables 1, 2 and 4. Target (issue 14): "
        "16 B a page."
    )


def prose_repeat(d):
    n = d["repeat"]["repeats"]
    return (
        "Tables 4 and 5 time every hold once, and a hold's wall time is its code's time plus "
        "whatever the host did in it (on this host a timer tick alone takes 20-50 µs, some "
        "100-300 µs; getrusage() does not see it): table 0's control, fixed work, reads p99.9 "
        "and maxima far above that work, so they cannot tell a 50 µs section from a 10 µs one "
        f"interrupted. Here each backlog of tables 4 and 5 is made {n} times from the same "
        "seed: the same holds in the same order over the same objects (a repeat that makes a "
        "different number of holds stops the benchmark), so the i-th hold of every repeat is "
        f"the same work. The host only adds time, so **the least of a hold's {n} readings is "
        "the closest to its code's time**; the columns \"least\" are over the holds' least "
        f'readings (the criterion\'s reading), "median of {n}" over their medians (a hold the '
        'host slowed in most repeats stays slow there; "unresolved": disturbed by getrusage() '
        f"in most). The control, {n} sequences of holds of fixed work read the same way, shows "
        "that the reading neither hides work nor keeps the host's: its max should stay near "
        'the work. "readings": those of the hold with the longest least reading (-1: '
        'disturbed). "longest single reading": the longest hold not disturbed, as tables 4 '
        "and 5 read it. Holds in µs."
    )


def prose_criterion(d):
    c = d["criterion"]
    missing = "" if c["controls"] else "; not measured: run with noise"
    return (
        "Every hold timed at N = 1,000,000 in tables 4 and 5 (probe, phase 1, take, "
        "hand-back, end of pass, rmmod, eviction; not phase 1 in one hold, which the module "
        "does not do), against the control, a fixed 10 µs computation timed the same way "
        f"(table 0: p99.9 up to {c['control_p999_ns'] / 1e3:.1f} µs, max up to "
        f"{c['control_max_ns'] / 1e3:.1f} µs{missing}). A set's p99.9 counts only if it has "
        "1,000 holds or more, its p99 100 or more (below that they are its maximum)."
    )


# Where each paragraph goes in tables.md: (what the line starts with, where,
# the paragraph).  "after" a heading: a blank line, then the paragraph;
# "before" a line: the paragraph, then a blank line; "opens": the paragraph
# right before the line (the oldest time's sentence and its two lines).
PROSE = (
    ("# aipu scale benchmark:", "after", prose_intro),
    ("## 0. The host's noise: holds of a fixed computation", "after", prose_noise),
    ("## 0b. ", "after", prose_first_touch),
    ("## 1. ", "after", prose_pages),
    ("## 2. ", "after", prose_files),
    ("## 3. ", "after", prose_threads),
    ("## 4. ", "after", prose_holds),
    ("Worst case within the wheel's span:", "opens", prose_oldest),
    ("| files in the slot |", "before", prose_cut_slot),
    ("## 5. ", "after", prose_evict),
    ("| file | N pages dirtied | shrinker: holds |", "before", prose_freers),
    ("## 6. ", "after", prose_steady),
    ("## 7. ", "after", prose_memory),
    ("## 8. ", "after", prose_repeat),
    ("- **by p99.9: ", "before", prose_criterion),
)


def prose_tables(data, tables):
    """tables.md's text with each table's prose in place (summary.md's part)."""
    out = []
    for line in tables.splitlines():
        for start, where, prose in PROSE:
            if line.startswith(start):
                text = prose(data)
                if where == "after":
                    out += [line, "", text]
                elif where == "opens":
                    out += [text, line]
                else:
                    out += [text, "", line]
                break
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def frame(ax, xlabel, ylabel, title, legend_size=8):
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=legend_size)
    ax.grid(True, which="both", alpha=0.3)


def save(fig, plots, name):
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(plots / name, dpi=120)
    plt.close(fig)
    return name


def hold_lines(ax, data):
    """The 50 us target and the control's p99.9 and max."""
    ax.axhline(TARGET_US, color="red", lw=1, ls=":", label=f"{TARGET_US} us target")
    c = control(data)
    if c:
        ax.axhline(us(c[0]), color="black", lw=0.8, ls="--", label="control (10 us work): p99.9")
        ax.axhline(us(c[1]), color="black", lw=0.8, ls="-.", label="control: max")


def plot_pages(data, plots):
    import matplotlib.pyplot as plt

    pages = data["pages"]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    names = {}
    for r in pages["rows"]:
        names.setdefault(r["pattern"], (r["pattern_name"], []))[1].append(r)
    for i, (name, rows) in enumerate(names.values()):
        x = [r["n"] for r in rows]
        ax.plot(x, [r["ns"]["median"] for r in rows], "o-", color=f"C{i}", label=name)
        ax.plot(x, [r["ns"]["p99"] for r in rows], "x--", color=f"C{i}")
    cap = pages.get("bytes_max", 4 << 20) // 8
    ax.axvline(cap, color="grey", lw=0.8, ls=":", label="a file's cap (bytes_max / 8 B)")
    frame(
        ax,
        "pages dirtied (N)",
        "ns per clean->dirty transition",
        "Cost per transition (median solid, p99 dashed)",
        7,
    )
    return save(fig, plots, "pages.png")


def plot_files(data, plots):
    import matplotlib.pyplot as plt

    rows = data["files"]["rows"]
    x = [r["files"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(x, [r["ns"]["median"] for r in rows], "o-", color="C0", label="new page, median")
    ax.plot(x, [r["ns"]["p99"] for r in rows], "x--", color="C0", label="new page, p99")
    ax.plot(
        x, [r["create_ns"]["median"] for r in rows], "s-", color="C1", label="first page, median"
    )
    ax.plot(x, [r["create_ns"]["p99"] for r in rows], "+--", color="C1", label="first page, p99")
    frame(ax, "tracked files", "ns per transition", "Cost per transition against tracked files")
    return save(fig, plots, "files.png")


def plot_holds(data, plots):
    import matplotlib.pyplot as plt

    rows = data["holds"]["rows"]
    backlogs = {}
    for r in rows:
        backlogs.setdefault(r["backlog"], (r["backlog_name"], []))[1].append(r)
    fig, axes = plt.subplots(1, len(backlogs), figsize=(5.2 * len(backlogs), 4.8), squeeze=False)
    for ax, (name, rs) in zip(axes[0], backlogs.values()):
        x = [r["n"] for r in rs]
        for i, (k, label) in enumerate(HOLDS):
            ax.plot(
                x, [us(max(r[k]["max"], 1)) for r in rs], "o-", color=f"C{i}", label=f"{label} max"
            )
            ax.plot(x, [us(max(r[k]["p999"], 1)) for r in rs], "x--", color=f"C{i}")
        if "dirty_end_pass_longest_cpu" in rs[0]:
            ax.plot(
                x,
                [us(max(r["dirty_end_pass_longest_cpu"], 1)) for r in rs],
                "s-",
                color="C9",
                label="end of pass, all put back: longest, CPU",
            )
        hold_lines(ax, data)
        frame(
            ax, "backlog: pages dirtied", "lock hold, us", f"{name}\n(max solid, p99.9 dashed)", 6
        )
    return save(fig, plots, "holds.png")


def plot_evict(data, plots):
    import matplotlib.pyplot as plt

    rows = data["evict"]["rows"]
    pats = {}
    for r in rows:
        pats.setdefault(r["pattern"], (r["pattern_name"], []))[1].append(r)
    fig, ax = plt.subplots(figsize=(7, 4.8))
    for i, (name, rs) in enumerate(pats.values()):
        x = [r["n"] for r in rs]
        ax.plot(x, [us(r["batched"]["max"]) for r in rs], "o-", color=f"C{i}", label=f"{name}: max")
        ax.plot(x, [us(r["batched"]["p999"]) for r in rs], "x--", color=f"C{i}", label="p99.9")
        ax.plot(
            x,
            [us(median(r["one_hold_cpu"])) for r in rs],
            "s:",
            color=f"C{i}",
            label="one hold, CPU",
        )
    hold_lines(ax, data)
    frame(
        ax,
        "pages dirtied in the file",
        "lock hold, us",
        f"Evicting one file ({data['evict']['kill_batch']} objects a hold)",
        6,
    )
    return save(fig, plots, "evict.png")


def plot_repeat(data, plots):
    """Table 8: each set's longest least-of-five reading against the backlog."""
    import matplotlib.pyplot as plt

    rows = data["repeat"]["rows"]
    sets = {}
    for r in rows:
        if r["n"]:
            sets.setdefault(r["what"], []).append(r)
    fig, ax = plt.subplots(figsize=(11, 5.5))
    for i, (name, rs) in enumerate(sets.items()):
        x = [r["n"] for r in rs]
        ax.plot(
            x,
            [us(max(r["least"]["max"], 1)) for r in rs],
            marker="o",
            color=f"C{i % 10}",
            ls=("-", "--", ":")[i // 10 % 3],
            lw=0.9,
            label=name[:60],
        )
    ax.axhline(TARGET_US, color="red", lw=1, ls=":", label=f"{TARGET_US} us target")
    for r in rows:
        if not r["n"]:
            ax.axhline(
                us(r["least"]["max"]),
                color="black",
                lw=0.8,
                ls="--",
                label=f"{r['what']}: least, max",
            )
    frame(
        ax,
        "backlog, pages",
        "longest hold, least of its readings, us",
        f"Each hold timed {data['repeat']['repeats']} times over the same backlog",
        5,
    )
    ax.legend(fontsize=5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save(fig, plots, "repeat.png")


def plot_threads(data, plots):
    import matplotlib.pyplot as plt

    rows = data["threads"]["rows"]
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [r["name"].replace(" (", "\n(") for r in rows]
    ax.bar(range(len(rows)), [r["per_s_median"] / 1e6 for r in rows], color="C0", alpha=0.6)
    for i, r in enumerate(rows):
        ax.plot([i] * len(r["per_s_rounds"]), [v / 1e6 for v in r["per_s_rounds"]], "k.")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("million transitions a second")
    ax.set_title("One thread against two (bars: median of rounds; dots: rounds)", fontsize=10)
    return save(fig, plots, "threads.png")


def plot_steady(data, plots):
    import matplotlib.pyplot as plt

    cfgs = {}
    for r in data["steady"]["rows"]:
        cfgs.setdefault(r["name"], []).append(r)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (name, rs) in enumerate(cfgs.items()):
        ax.plot(
            [r["files"] for r in rs],
            [r["per_extent_written"] for r in rs],
            "o-",
            color=f"C{i}",
            label=f"{name} ({rs[0]['slot_jiffies']} jiffies)",
        )
    ax.axhline(STEADY_TARGET, color="red", lw=1, ls=":", label=f"{STEADY_TARGET} target")
    ax.set_xscale("log")
    ax.set_xlabel("files")
    ax.set_ylabel("files looked at per extent written")
    ax.set_title("Phase 1 in the steady state", fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    return save(fig, plots, "steady.png")


PLOTS = (
    ("pages", plot_pages),
    ("files", plot_files),
    ("holds", plot_holds),
    ("evict", plot_evict),
    ("threads", plot_threads),
    ("steady", plot_steady),
    ("repeat", plot_repeat),
)


def plot_all(data, plots):
    import matplotlib

    matplotlib.use("Agg")
    plots.mkdir(parents=True, exist_ok=True)
    return [f(data, plots) for name, f in PLOTS if data.get(name)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument(
        "--prose",
        action="store_true",
        help="print RESULTS_DIR/tables.md with each table's prose in place, nothing else",
    )
    args = ap.parse_args()
    data = {n: load(args.dir, n) for n in NAMES}
    data = {k: v for k, v in data.items() if v is not None}
    if len(data) <= 1:
        print(f"report.py: no results in {args.dir}", file=sys.stderr)
        return 1
    if args.prose:
        sys.stdout.write(prose_tables(data, (args.dir / "tables.md").read_text()))
        return 0
    lines = key_figures(data)
    if not args.no_plots:
        made = plot_all(data, args.dir / "plots")
        lines += ["", "Plots: " + ", ".join(f"[{m}](plots/{m})" for m in made)]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
