# jaxcc — the two set-up commands (README): `make train` and `make test`; `make test-full` beside them.
# Each installs what it needs first; all work on a fresh clone (Debian/Ubuntu; root for the
# system packages, the network-namespace emulation tests and kernel CUBIC/BBR).
PY ?= python3
PIP_FLAGS ?= -q
# Debian 12's python3 is "externally managed" (PEP 668): pip refuses to install outside a venv
# unless told.  Outside a venv, install into /usr/local (root) or ~/.local like any pip user does;
# inside a venv (make PY=.venv/bin/python ...) nothing is added.
PIP_SYSTEM := $(shell $(PY) -c 'import os, sys, sysconfig; print("--break-system-packages" if sys.prefix == sys.base_prefix and os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) else "")' 2>/dev/null)
CONFIG ?= pareto_staged
# Every script that starts Python (launch/, datapath/ test helpers) starts $JAXCC_PYTHON: the
# interpreter make was given, as an absolute path (a venv's python keeps working after a cd).
export JAXCC_PYTHON ?= $(shell $(PY) -c 'import sys; print(sys.executable)' 2>/dev/null || echo $(PY))

# The fast tier's pytest runs in two parts: what does not measure wall-clock time on XDIST
# workers (one per core), then the real-time tests (emulated links, pacing, learner timeouts)
# alone, so that no other test loads the machine while they measure it (docs/testing.md).
# pytest's status 5 is "no test selected", not a failure.
# The tests' compiled JAX programs are shared by every test process of a run (xdist workers, the
# CLI subprocesses; jaxcc.jax_cache) and kept per checkout, apart from the user's own cache.
XDIST ?= auto
TEST_CACHE ?= $(CURDIR)/build/jax-cache-tests
PYTEST := JAXCC_COMPILATION_CACHE=$(TEST_CACHE) $(PY) -m pytest -q -p no:cacheprovider --durations=20
FAST := not full
PARALLEL = -n $(XDIST) --dist=loadgroup -m "$(FAST) and not realtime"
# The fast tier's parallel part compiles its XLA programs cheaply: its programs are small and
# most run once, so compiling is most of their cost.  Two switches: LLVM's optimisation level 0
# (measured: -15% on four test files, -23% on a pareto_smoke training), and XLA:CPU's older
# fusion emitters instead of its MLIR ones (measured: -41% on four test files cold, -33% on a
# pareto_smoke training; CHANGELOG).  Its values agree with the optimised
# programs' to float32 rounding, not bit for bit (docs/testing.md); the real-time part and the
# full tier compile as users do.  XLA aborts on a flag it does not know, so the emitter switch
# is passed only where the installed jaxlib knows it (XLA_KNOWS, one short probe).
XLA_KNOWS = $(shell XLA_FLAGS=$(1) $(PY) -c 'import jax; jax.devices()' >/dev/null 2>&1 && echo $(1))
FAST_XLA_FLAGS = $(strip $(XLA_FLAGS) --xla_backend_optimization_level=0 $(call XLA_KNOWS,--xla_cpu_use_fusion_emitters=false))
SERIAL = -m "$(FAST) and realtime"

.PHONY: help deps sysdeps pydeps pydeps-train train baselines test test-full pytest pytest-full datapath ns3 bazel fuzz fuzz-short bench clean

help:
	@echo "make train       install jaxcc and run the main job (python3 -m jaxcc.train --config=$(CONFIG))"
	@echo "make test        install everything and run the fast test tier (what .ci/run runs; docs/testing.md)"
	@echo "make test-full   the fast tier and everything else: long sweeps, real-time runs, Bazel, 60-s fuzzing"
	@echo "make bench       simulator throughput benchmark -> bench.json"
	@echo "setup/check_clean_system.sh [--quick]   (root) make test in a fresh Debian 12 chroot: proves setup/apt-packages.txt"

sysdeps:  ## Debian packages listed in setup/apt-packages.txt (skipped without root/apt-get)
	@bash setup/install_system_packages.sh

pydeps-train:  ## the Python package alone: what training needs (CPU jax by default; `pip install -e .[gpu]` for CUDA)
	@$(PY) -m pip --version >/dev/null 2>&1 || bash setup/install_system_packages.sh python3-pip
	$(PY) -m pip install $(PIP_FLAGS) $(PIP_SYSTEM) -e .

pydeps:  ## the Python package with its test extras
	@$(PY) -m pip --version >/dev/null 2>&1 || bash setup/install_system_packages.sh python3-pip
	$(PY) -m pip install $(PIP_FLAGS) $(PIP_SYSTEM) -e '.[test]'

deps: sysdeps pydeps

train: pydeps-train
	$(PY) -m jaxcc.train --config=$(CONFIG)

baselines: pydeps  ## the in-simulator baselines on Pareto's test set
	$(PY) -m jaxcc.evaluate --controller=bbr,cubic,oracle --suite=pareto --out=results/baselines

datapath: sysdeps  ## C++ sender/receiver/policy library (CMake) and their GoogleTest tests
	bash datapath/build.sh
	bash datapath/tools/build.sh

ns3: sysdeps  ## the ns-3.37 dumbbell reference (Debian's libns3-dev) -> datapath/ns3/build/ns3-dumbbell
	bash datapath/ns3/build.sh

bazel: sysdeps  ## the same C++ targets through Bazel (Debian's bazel-bootstrap, offline)
	bash datapath/bazel_check.sh

fuzz: datapath  ## libFuzzer, 60 s per target; fails on a crash or too few executed inputs
	bash datapath/fuzz/run.sh --ci

fuzz-short: datapath  ## the same targets and floors, 10 s per target (the fast tier)
	bash datapath/fuzz/run.sh --seconds=10

pytest: pydeps  ## the fast tier's tests: in parallel, then the real-time ones alone
	XLA_FLAGS="$(FAST_XLA_FLAGS)" $(PYTEST) $(PARALLEL) tests || test $$? -eq 5
	$(PYTEST) $(SERIAL) tests || test $$? -eq 5

pytest-full: FAST := full
pytest-full: pydeps  ## what only the full tier runs, the same way
	$(PYTEST) $(PARALLEL) tests || test $$? -eq 5
	$(PYTEST) $(SERIAL) tests || test $$? -eq 5

test: deps datapath ns3 fuzz-short pytest

test-full: test bazel fuzz pytest-full

bench: pydeps
	$(PY) -m jaxcc.bench --out=bench.json

clean:
	rm -rf datapath/build datapath/ns3/build build results .pytest_cache
