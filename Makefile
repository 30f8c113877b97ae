# wirespeed: two set-up commands, `make demo` and `make test`, both from a fresh Debian machine as root.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Every system package the project needs; the tests skip (with a reason) what a missing one prevents.
APT_PACKAGES := iproute2 iperf3 openssh-server openssh-client ethtool perftest sockperf openmpi-bin tmux procps \
	util-linux iputils-ping python3 python3-venv python3-pip chromium-headless-shell openssl \
	slurmctld slurmd slurm-client munge avahi-daemon avahi-utils dbus sudo gcc libc6-dev iptables \
	prometheus

.PHONY: all install system-deps venv demo test lint typecheck unit clean

all: test

system-deps:
	@if [ "$$(id -u)" != 0 ]; then \
		echo "make: not root: skipping apt packages ($(APT_PACKAGES)); root tests will skip"; \
	elif dpkg -s $(APT_PACKAGES) >/dev/null 2>&1; then \
		echo "make: system packages present"; \
	else \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends $(APT_PACKAGES) >/dev/null \
		&& echo "make: installed $(APT_PACKAGES)"; \
	fi

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.installed

install: system-deps venv

demo: install
	$(BIN)/python -m wirespeed.demo

lint: venv
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: venv
	$(BIN)/mypy

unit: venv
	$(BIN)/pytest tests/unit -q

# The unit tests on two workers; the integration tests one at a time: test_setup removes a package from this
# machine while it runs, and a lost management link is told apart from a stopped server only when nothing else
# loads the machine (docs/PERFORMANCE.md, "Two workers").
test: install lint typecheck
	$(BIN)/pytest -q -n 2 --dist loadfile tests/unit
	$(BIN)/pytest -q tests/integration

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache src/*.egg-info
