# SPDX-License-Identifier: GPL-2.0
#
# make                 build aipu.ko for KDIR (default: the running kernel's
#                      build tree, else the newest installed Debian headers)
# make check           unit tests + VM tests on every installed kernel
# make run             VM demo: kernel, pu and aipu side by side
# make unit            user-space unit tests only
# make vmtest KVER=..  VM tests on one kernel
# make lint            checkpatch, shellcheck, python lint
# make sparse          sparse (C=1) on every installed kernel
# make crashtest       hard resets under aipu, pu and Linux's own writeback:
#                      is every record older than the bound on disk?
#                      (TRIALS=10 per policy and kernel; ~45 s a trial)
# make bench           the benchmark suite (bench/README.md): device model x
#                      policy x workload on 6.1 and 6.12, tables and plots
#                      in build/bench/ (~2 h 15 min a kernel: docs/results.md);
#                      QUICK=1: a small matrix, under 15 minutes;
#                      KVERS="..." to pick kernels, MODELS="..." models;
#                      then the scale benchmark (make bench-scale)
# make bench-scale     the log-based queue's costs (src/queue/queue.c) against
#                      the backlog on the host's CPU (bench/scale/README.md),
#                      about 10 minutes; QUICK=1 under a minute;
#                      SCALE_OUT=DIR elsewhere
# make debugkernel     KASAN/lockdep/kmemleak 6.1 kernel (cached in
#                      /var/cache/aipu/debug-kernel) and aipu.ko for it:
#                      scripts/debug-kernel.sh, 16-40 min the first time
# make debugtest       the VM tests on that kernel, kmemleak scans around
#                      them (scripts/debugtest.sh): TESTS="t_stress ..."
#                      (default all), STRESS_SECONDS=, FAILSLAB=PERCENT,
#                      FREE_LATER=1 (frees parked as without KASAN)
# make kerneltree     Debian's 7.2 source (unstable's linux-source-7.2),
#                      a small test kernel built from it (cached in
#                      /var/cache/aipu/kernel-7.2) and aipu.ko for it:
#                      scripts/kernel-tree.sh, 25-60 min the first time;
#                      then make vmtest KVER=7.2.13-aipu (KVERSION=7.2)
# make dkms            dkms add/build/install/autoinstall of dkms.conf for
#                      every installed kernel, in private trees under
#                      build/dkms (scripts/dkms-check.sh)
# make fstests         fstests (xfstests) on ext4 and xfs, without and with
#                      aipu (max_age 1 s, period 100 ms) in the same boot,
#                      on 6.1 and 6.12; prints the tests whose result
#                      differs (scripts/fstests.sh, docs/reliability.md).
#                      FSTESTS_SRC=checkout|tarball (default: the pinned
#                      ../shared/vendor/xfstests-*.tar.gz), KVERS="..",
#                      FS="ext4 xfs", TESTS="generic/001 ..", PART=K/N
#                      (the K-th of N parts of the list), EXCLUDE="..";
#                      hours, not part of make check
# make stress         churn stress (tests/vm/t_stress.sh) and the inode and
#                      memory soak (tests/vm/t_soak.sh), each for
#                      STRESS_SECONDS (1800), on every installed kernel, or
#                      KVER=..; make check runs them for 60 s, make vmtest
#                      t_stress for 120 s

KDIR ?= $(firstword $(wildcard /lib/modules/$(shell uname -r)/build) \
	$(lastword $(sort $(wildcard /lib/modules/*/build))))
MDIR := $(CURDIR)

.PHONY: all modules clean check unit vmtest run lint sparse allkernels crashtest bench stress
.PHONY: debugkernel debugtest kerneltree dkms fstests

all modules:
	@test -n "$(KDIR)" || { echo "No kernel headers found: run scripts/install-deps.sh (or set KDIR=)." >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(MDIR) modules

clean:
	$(MAKE) -C $(or $(KDIR),/nonexistent) M=$(MDIR) clean 2>/dev/null || true
	rm -rf build tests/unit/build

unit:
	$(MAKE) -C tests/unit

# Build one aipu.ko per installed kernel into build/<kver>/.
allkernels:
	scripts/build-all.sh

vmtest: allkernels
	scripts/vmtest.sh $(KVER)

check:
	scripts/check.sh

run: allkernels
	scripts/demo.sh

lint:
	scripts/lint.sh

sparse:
	scripts/build-all.sh C=1

TRIALS ?= 10
crashtest: allkernels
	scripts/crashtest.sh --trials $(TRIALS)

STRESS_SECONDS ?= 1800
stress: allkernels
	@expr '$(STRESS_SECONDS)' : '[0-9][0-9]*$$' >/dev/null && [ '$(STRESS_SECONDS)' -ge 30 ] || \
		{ echo "STRESS_SECONDS must be a whole number of seconds, at least 30, not '$(STRESS_SECONDS)'." >&2; exit 2; }
	AIPU_TESTS="t_stress t_soak" AIPU_STRESS_SECONDS=$(STRESS_SECONDS) \
		AIPU_SOAK_SECONDS=$(STRESS_SECONDS) \
		AIPU_TEST_TIMEOUT=$$(($(STRESS_SECONDS) + 900)) \
		AIPU_VM_TIMEOUT=$$((2 * $(STRESS_SECONDS) + 1500)) scripts/vmtest.sh $(KVER)

bench: allkernels
	scripts/bench.sh $(if $(QUICK),--quick) $(if $(KVERS),--kernels "$(KVERS)") \
		$(if $(MODELS),--models "$(MODELS)")
	bench/scale/run.sh $(if $(QUICK),--quick)

debugkernel:
	scripts/debug-kernel.sh

# scripts/fstests.sh builds aipu.ko itself (scripts/build-all.sh).
fstests:
	scripts/fstests.sh $(if $(FSTESTS_SRC),--src "$(FSTESTS_SRC)") \
		$(if $(KVERS),--kernels "$(KVERS)") $(if $(FS),--fs "$(FS)") \
		$(if $(TESTS),--tests "$(TESTS)") $(if $(PART),--part "$(PART)") \
		$(if $(EXCLUDE),--exclude "$(EXCLUDE)")

KVERSION ?= 7.2
kerneltree:
	scripts/kernel-tree.sh --version $(KVERSION) --module

dkms:
	scripts/dkms-check.sh

# STRESS_SECONDS only when given (make stress's 1800 is not the default here).
debugtest:
	scripts/debugtest.sh $(if $(filter command line environment,$(origin STRESS_SECONDS)),--stress-seconds $(STRESS_SECONDS)) \
		$(if $(FAILSLAB),--failslab $(FAILSLAB)) $(if $(FREE_LATER),--free-later) $(TESTS)

# The user-space scale benchmark of the log-based queue (src/queue/queue.c with
# log.c, live.c, flog.c and wheel.c) on the host's CPU (bench/scale/README.md):
# build/bench/<date>-host-scale/ (SCALE_OUT=DIR elsewhere: not OUT, which a
# command line would hand down to the sub-makes' own OUT), about 10 min;
# QUICK=1: sizes up to 100,000, under a minute.
.PHONY: bench-scale
bench-scale:
	bench/scale/run.sh $(if $(QUICK),--quick) $(if $(SCALE_OUT),--out "$(SCALE_OUT)")
