# SPDX-License-Identifier: GPL-2.0
# ibckpt: transparent freeze/thaw/checkpoint of unmodified RDMA verbs applications.
#
#   make              kmod/ibckpt.ko, provider/libibckpt-rdmav34.so, tools/ibckpt, test programs
#   make check        every test (unit under ASan+UBSan, KUnit, VM); ends "N passed, N failed"
#   make check-multinode   the two-node VM cases (tests/vm/multinode/), also in check
#   make demo         the main job, end to end, in the VM test bed
#   make bench        overhead and latency ratios, with and without ibckpt, same run
#   make install / uninstall   (DESTDIR, PREFIX aware)
#   make deb          Debian packages ibckpt and ibckpt-dkms in build/deb (debhelper, dh-dkms)
#   make dist         the source tarball build/dist/ibckpt-VERSION.tar.gz (make deb's, DKMS's)
#
# The version is the tree's VERSION file, for the module, the provider, the CLI
# and the packages; IBCKPT_VERSION= builds the packages as another version.
#
# KDIR defaults to the headers of Debian 12's current kernel package, resolved
# through linux-headers-amd64 (scripts/kver); override KVER or KDIR to change it.

KVER ?= $(shell scripts/kver 2>/dev/null)
KDIR ?= /usr/src/linux-headers-$(KVER)
PREFIX ?= /usr/local
DESTDIR ?=
export PREFIX DESTDIR
IBCKPT_VERSION ?= $(shell cat VERSION)

SUBDIRS := provider tools tests/kmod tests/freeze tests/traffic tests/provider tests/bench tests/mpi tests/criu
subdir-targets = $(foreach d,$(SUBDIRS),$(if $(wildcard $(d)/Makefile),$(d)))

.PHONY: all modules userspace clean install uninstall check check-unit check-kunit \
	check-vm check-multinode check-debug check-static check-deb demo bench soak deps kdir-check dist deb

all: modules userspace

kdir-check:
	@if [ -z "$(KVER)" ] && [ "$(origin KDIR)" = file ]; then \
		echo "error: cannot resolve the kernel version: install linux-headers-amd64" \
		     "(apt-get install linux-headers-amd64) or set KDIR=" >&2; exit 1; fi
	@if [ ! -f "$(KDIR)/Makefile" ]; then \
		echo "error: kernel headers not found in KDIR=$(KDIR)" >&2; \
		echo "error: apt-get install linux-headers-$(KVER), or set KDIR=" >&2; exit 1; fi

modules: kdir-check
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

userspace:
	@set -e; for d in $(subdir-targets); do $(MAKE) -C $$d; done

# Kbuild's clean of M=$(CURDIR) would recurse into build/ (the unpacked test
# kernel): clean the module's own directory only.
clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR)/kmod clean
	@for d in $(subdir-targets); do $(MAKE) -C $$d clean; done

install: all
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_PATH=$(DESTDIR) INSTALL_MOD_DIR=extra \
		DEPMOD=true modules_install
	@if [ -z "$(DESTDIR)" ]; then depmod -a $(KVER); fi
	$(MAKE) -C provider install
	$(MAKE) -C tools install

uninstall:
	rm -f $(DESTDIR)/lib/modules/$(KVER)/extra/kmod/ibckpt.ko \
	      $(DESTDIR)/lib/modules/$(KVER)/extra/ibckpt.ko
	@if [ -z "$(DESTDIR)" ]; then depmod -a $(KVER); fi
	$(MAKE) -C provider uninstall
	$(MAKE) -C tools uninstall

deps:
	scripts/install-deps all

# The source tarball: the tree's files (git's view of the working tree), VERSION
# set; `make deb` builds from it, and unpacked in /usr/src it is a DKMS tree.
dist:
	scripts/mkdist -V $(IBCKPT_VERSION)

# Debian packages with Debian's tools (dpkg-buildpackage, debhelper, dh-dkms;
# no root needed) from the dist tarball, checked by lintian: build/deb/.
deb:
	scripts/install-deps deb
	scripts/mkdeb -V $(IBCKPT_VERSION)

# Tests. check-* first install what they need, then build, then run.
check: deps
	$(MAKE) all
	tests/check unit static kunit deb vm multinode

check-unit:
	scripts/install-deps build
	$(MAKE) userspace
	tests/check unit

check-kunit:
	tests/check kunit

check-static:
	scripts/install-deps build kunit
	tests/check static

# deb first: the packages' VM case (75-deb-install) installs what it builds.
check-vm:
	scripts/install-deps build vm deb
	$(MAKE) all
	tests/check deb vm

# The packages of VERSION and VERSION+1, built, linted, their contents checked.
check-deb:
	scripts/install-deps deb
	tests/check deb

# tests/vm/multinode/*, each on two guests joined by one link
# (tests/vm/run --nodes 2); part of check too.
check-multinode:
	scripts/install-deps build vm
	$(MAKE) all
	tests/check multinode

# The debug-kernel lane: the module's VM cases on linux-source-6.1 built with
# KASAN, lockdep, DEBUG_ATOMIC_SLEEP, DEBUG_OBJECTS and KMEMLEAK
# (tests/vm/debug-kernel; about 13 minutes to build the first time, cached in
# build/vm-debug/). Not part of check: CI has 90 minutes.
check-debug:
	scripts/install-deps build vm debug
	$(MAKE) all
	tests/check debug

demo:
	scripts/install-deps build vm
	$(MAKE) all
	tests/vm/run --timeout 900 -- tests/demo/demo.sh

# The long runs of the cases that make check runs shorter: the
# freeze-under-traffic test with SOAK_CYCLES freeze/thaw cycles of both
# processes (every 10th snapshot cross-checked); the Open MPI jobs on one
# node (mpirun) and on two (srun), the two-node pingpongs and the Slurm step
# frozen whole SOAK_JOB_CYCLES times each; the two-node job checkpointed and
# restarted SOAK_JOB_CYCLES / 2 times; the freeze cycles beside four
# spinning threads and the job selectors with movers that tick every ms.
SOAK_CYCLES ?= 2000
SOAK_JOB_CYCLES ?= 200
soak:
	scripts/install-deps build vm
	$(MAKE) all
	tests/vm/run --timeout 36000 -- env IBCKPT_CYCLES=$(SOAK_CYCLES) IBCKPT_XCHECK_EVERY=10 \
		tests/vm/cases/50-quiesce-traffic.sh
	tests/vm/run --smp 2 --timeout 36000 -- env IBCKPT_CYCLES=$(SOAK_JOB_CYCLES) \
		tests/vm/cases/55-job-mpi.sh
	tests/vm/run --nodes 2 --timeout 36000 -- env IBCKPT_CYCLES=$(SOAK_JOB_CYCLES) \
		tests/vm/multinode/40-slurm-mpi.sh
	tests/vm/run --nodes 2 --timeout 36000 -- env IBCKPT_CYCLES=$(SOAK_JOB_CYCLES) \
		tests/vm/multinode/10-rc-pingpong.sh
	tests/vm/run --nodes 2 --timeout 36000 -- env IBCKPT_CYCLES=$(SOAK_JOB_CYCLES) \
		IBCKPT_ROUNDS=20 tests/vm/multinode/30-slurm-step.sh
	tests/vm/run --nodes 2 --timeout 36000 -- env IBCKPT_ROUNDS=$$(($(SOAK_JOB_CYCLES) / 2)) \
		tests/vm/multinode/20-traffic-ckpt.sh
	tests/vm/run --timeout 36000 -- env IBCKPT_SPINNERS=4 tests/vm/cases/47-freeze-cycles.sh
	tests/vm/run --timeout 36000 -- env IBCKPT_MOVER_TICK_MS=1 tests/vm/cases/53-job-selectors.sh

bench:
	scripts/install-deps all
	$(MAKE) all
	tests/bench/run
