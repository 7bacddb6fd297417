"""Real-weight benchmark files: the bundled SmolLM2 requantized by llama.cpp's own quantizer.

Owns making (once) and finding, under ``<cache root>/bench-models/``: an F16 GGUF of the bundled
model (every metadata field copied, each tensor dequantised with gguf-py; ``general.file_type``
becomes F16) and from it ``llama_model_quantize`` files in `FTYPES` with llama.cpp's default
parameters. SmolLM2's width 576 is not a multiple of 256, so the K-quant files are llama.cpp's
real fallback mixes (Q5_0 / Q8_0 rows beside the K-quants). Names carry the bundled file's
cache key, so a new bundled file makes new ones. The quantizer runs in a child process (its log
and any crash stay there). Does not own measuring them (`bench.measure`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FTYPES = ("Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0")
SKIPPED_FIELDS = ("GGUF.", "general.architecture", "general.alignment")  # the writer sets these


def bench_models_dir() -> Path:
    from engine.loader import cache_root

    folder = cache_root() / "bench-models"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _stem() -> str:
    from engine.loader import gguf_cache_key
    from engine.models import bundled_gguf_path

    return f"smollm2-135m-{gguf_cache_key(bundled_gguf_path())[:12]}"


def f16_model() -> Path:
    """The bundled model dequantised to F16 (made once)."""
    from engine.models import bundled_gguf_path

    target = bench_models_dir() / f"{_stem()}-F16.gguf"
    if not target.is_file():
        tmp = target.with_suffix(".tmp")
        dequantize_to_f16(bundled_gguf_path(), tmp)
        os.replace(tmp, target)
    return target


def dequantize_to_f16(source: Path, target: Path) -> None:
    """Copy ``source``'s metadata and its tensors as F16 (1-D tensors stay F32, as llama.cpp)."""
    import gguf
    import numpy as np

    reader = gguf.GGUFReader(source)
    arch = str(reader.fields["general.architecture"].contents())
    writer = gguf.GGUFWriter(str(target), arch)
    for key, field in reader.fields.items():
        if key.startswith(SKIPPED_FIELDS):
            continue
        value = field.contents()
        if key == "general.file_type":
            value = int(gguf.LlamaFileType.MOSTLY_F16)
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, value, field.types[0], sub_type)
    for tensor in reader.tensors:
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        kept = np.float32 if values.ndim == 1 else np.float16
        writer.add_tensor(tensor.name, np.ascontiguousarray(values, dtype=kept))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def requantized_model(ftype: str) -> Path:
    """The bundled model requantized to ``ftype`` by llama.cpp (made once; needs llama_cpp)."""
    if ftype not in FTYPES:
        raise ValueError(f"ftype must be one of {FTYPES}, got {ftype!r}")
    target = bench_models_dir() / f"{_stem()}-{ftype}.gguf"
    if target.is_file():
        return target
    from bench.peers import llama_cpp_available

    if not llama_cpp_available():
        raise RuntimeError("llama-cpp-python is not installed (make bench-peers)")
    source, tmp = f16_model(), target.with_suffix(".tmp")
    cmd = [sys.executable, "-m", "bench.requant", str(source), str(tmp), ftype]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not tmp.is_file():
        tail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise RuntimeError(f"llama_model_quantize to {ftype} failed: {tail}")
    os.replace(tmp, target)
    return target


def quantize(source: Path, target: Path, ftype: str) -> None:
    """llama.cpp's ``llama_model_quantize`` with its default parameters and ``ftype``."""
    import llama_cpp

    from bench.measure import physical_cores

    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{ftype}")
    params.nthread = physical_cores()
    status = llama_cpp.llama_model_quantize(
        str(source).encode(), str(target).encode(), llama_cpp.byref(params)
    )
    if status != 0:
        raise RuntimeError(f"llama_model_quantize returned {status}")


if __name__ == "__main__":  # python -m bench.requant SOURCE TARGET FTYPE
    quantize(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3])
