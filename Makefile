# Two entry points: `make run` and `make test`. Both install what is missing first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test lint bench clean docs

$(STAMP): pyproject.toml scripts/install-system-deps.sh
	scripts/install-system-deps.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# the libvirt binding builds against libvirt-dev (same version); without it the simulator still works
	if pkg-config --exists libvirt; then \
	  $(BIN)/python -m pip install --quiet "libvirt-python==$$(pkg-config --modversion libvirt)"; fi
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/sova run scenarios/quickstart.toml --out results/quickstart

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check --fix src tests benchmarks
	$(BIN)/ruff format src tests benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/sim_speed.py

clean:
	rm -rf $(VENV) results .pytest_cache

docs: $(STAMP)
	$(BIN)/python -c "from pathlib import Path; from sova.model.reference import splice; p = Path('docs/scenario-format.md'); p.write_text(splice(p.read_text()))"
