/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every knob, once: its name, default, range and what it does.  From this
 * list src/knobs.c makes the variables (aipu_NAME), the module parameters
 * with their descriptions (modinfo aipu) and the table /sys/kernel/aipu/
 * serves; t_abi checks docs/ABI/testing/sysfs-kernel-aipu against modinfo,
 * so the ABI file follows this list too.  Included only by src/knobs.c,
 * once per use, with AIPU_CHOICE and AIPU_NUMBER defined for that use (no
 * include guard, as for the kernel's trace headers).
 *
 * AIPU_CHOICE(name, conflicts, changed, description, choices...);: one of
 * the names, in the order of its enum; the first is the default.
 * @conflicts says why a value cannot be taken now, @changed is called
 * after a store changed it.  The policy comes first: aipu_knobs[0].
 *
 * AIPU_NUMBER(name, default, min, max, description);: an integer in
 * [min, max].
 */
AIPU_CHOICE(policy, policy_needs_probe, aipu_policy_changed,
	    "Update policy at load: kernel, aipu, pu or stage (default kernel)",
	    "kernel", "aipu", "pu", "stage");
AIPU_CHOICE(write_alloc, purge_needs_writer, NULL,
	    "update: written pages stay cached; purge: dropped once clean (default update)",
	    "update", "purge");
AIPU_NUMBER(max_age_ms, 30000, 100, 3600000,
	    "Write pages dirty for longer than this");
AIPU_NUMBER(period_ms, 1000, 10, 60000,
	    "Flusher period");
AIPU_NUMBER(pu_interval_ms, 30000, 100, 3600000,
	    "pu: write everything this often");
AIPU_NUMBER(handover_ms, 35000, 0, 3600000,
	    "Keep Linux's periodic writeback on at least this long after load");
AIPU_NUMBER(stage_interval_ms, 1000, 0, 3600000,
	    "stage: minimum interval C between staged batches, 0 = at once");
AIPU_NUMBER(stage_batch, 1, 1, 65536,
	    "stage: pages per staged batch, oldest files first");
AIPU_NUMBER(pace, 1, 0, 1,
	    "aipu: spread a period's writes across the period");
AIPU_NUMBER(max_batch, 0, 0, 16777216,
	    "aipu: at most this many pages per flusher pass, 0 = no limit");
