# Two entry points: `make run` and `make test`. Both install what is missing first.
# SIMULATOR_ONLY=1 skips the Debian packages of the libvirt driver and `sova lab` (libvirt, QEMU):
#   make run SIMULATOR_ONLY=1
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SIMULATOR_ONLY ?=
# a simulator-only install is not a full one: `make test` after `make run SIMULATOR_ONLY=1` installs the rest
STAMP  := $(VENV)/.installed$(if $(SIMULATOR_ONLY),-simulator-only)-stamp

.PHONY: run test lint bench clean docs

$(STAMP): pyproject.toml scripts/install-system-deps.sh
	@if [ -z "$(SIMULATOR_ONLY)" ]; then scripts/install-system-deps.sh; fi
	@echo "setting up $(VENV) (Python packages; a minute or two the first time)"
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@# the libvirt binding builds against libvirt-dev (same version); without it the simulator still works
	@if [ -z "$(SIMULATOR_ONLY)" ] && pkg-config --exists libvirt 2>/dev/null; then \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check \
	    "libvirt-python==$$(pkg-config --modversion libvirt)"; fi
	@touch $(STAMP)

run: $(STAMP)
	@$(BIN)/sova run scenarios/quickstart.toml --out results/quickstart --force

test: $(STAMP)
	@$(BIN)/ruff check src tests benchmarks scripts
	@$(BIN)/ruff format --check src tests benchmarks scripts
	@$(BIN)/pytest -q -n auto --dist worksteal -m "not lab"
	@$(BIN)/pytest -q -m lab

lint: $(STAMP)
	@$(BIN)/ruff check --fix src tests benchmarks scripts
	@$(BIN)/ruff format src tests benchmarks scripts

bench: $(STAMP)
	@$(BIN)/python benchmarks/sim_speed.py

clean:
	rm -rf $(VENV) results .pytest_cache

docs: $(STAMP)
	@$(BIN)/python -c "from pathlib import Path; from sova.model.reference import splice; p = Path('docs/scenario-format.md'); p.write_text(splice(p.read_text()))"
