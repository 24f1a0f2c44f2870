# jaxcc — the two set-up commands (README): `make train` and `make test`.
# Both install what they need first; both work on a fresh clone (Debian/Ubuntu; root for the
# system packages, the network-namespace emulation tests and kernel CUBIC/BBR).
PY ?= python3
PIP_FLAGS ?= -q
# Debian 12's python3 is "externally managed" (PEP 668): pip refuses to install outside a venv
# unless told.  Outside a venv, install into /usr/local (root) or ~/.local like any pip user does;
# inside a venv (make PY=.venv/bin/python ...) nothing is added.
PIP_SYSTEM := $(shell $(PY) -c 'import os, sys, sysconfig; print("--break-system-packages" if sys.prefix == sys.base_prefix and os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) else "")' 2>/dev/null)
CONFIG ?= pareto_staged

.PHONY: help deps sysdeps pydeps train baselines test pytest datapath ns3 bazel fuzz bench clean

help:
	@echo "make train   install jaxcc and run the main job (python -m jaxcc.train --config=$(CONFIG))"
	@echo "make test    install everything and run the whole test suite (what .ci/run runs)"
	@echo "make bench   simulator throughput benchmark -> bench.json"
	@echo "setup/check_clean_system.sh [--quick]   (root) make test in a fresh Debian 12 chroot: proves setup/apt-packages.txt"

sysdeps:  ## Debian packages listed in setup/apt-packages.txt (skipped without root/apt-get)
	@bash setup/install_system_packages.sh

pydeps:  ## the Python package with its test extras (CPU jax by default; `pip install -e .[gpu]` for CUDA)
	@$(PY) -m pip --version >/dev/null 2>&1 || bash setup/install_system_packages.sh python3-pip
	$(PY) -m pip install $(PIP_FLAGS) $(PIP_SYSTEM) -e '.[test]'

deps: sysdeps pydeps

train: pydeps
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

pytest: pydeps
	$(PY) -m pytest -q -p no:cacheprovider tests

test: deps datapath ns3 bazel fuzz pytest

bench: pydeps
	$(PY) -m jaxcc.bench --out=bench.json

clean:
	rm -rf datapath/build datapath/ns3/build build results .pytest_cache
