"""`python -m bench tokenizer-open`: reading a GGUF's tokenizer and config on a first open.

Measures, each in a fresh process with an empty cache (cold), on a GGUF carrying a real-size
vocabulary:

- ``before``: what the header cache did until format 3: gguf-py's `GGUFReader` (the fast
  path's hyper-parameters), then transformers' `AutoConfig` and `AutoTokenizer` with
  ``gguf_file=`` (each parses the metadata again);
- ``after``: the engine's first open of the header: `read_gguf_header` (one pass with
  `engine.gguf.reader`, tokenizer and config built from it) and loading that tokenizer as
  `engine.loader` does;
- ``later``: the same with the header cache already written;
- ``llama.cpp``: llama-cpp-python loading the same file with ``vocab_only=True``.

The file: ``--gguf FILE``, or one written from ``--tiktoken qwen.tiktoken`` (Qwen2.5's real
151,643-token BPE, shipped by some SDKs, e.g. the dashscope wheel's
``dashscope/resources/qwen.tiktoken``), else a generated 151,665-token / ~151k-merge vocabulary.
Import time (transformers, torch-free) is reported apart from the work. Prints a table, or JSON
with ``--json``. Figures on a shared machine vary: take the best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

_BEFORE = """
import json, sys, time
t0 = time.perf_counter()
import gguf
from transformers import AutoConfig, AutoTokenizer
t1 = time.perf_counter()
path = sys.argv[1]
from pathlib import Path
p = Path(path)
reader = gguf.GGUFReader(p)
t2 = time.perf_counter()
config = AutoConfig.from_pretrained(p.parent, gguf_file=p.name)
t3 = time.perf_counter()
tok = AutoTokenizer.from_pretrained(p.parent, gguf_file=p.name)
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "work_s": t4 - t1, "gguf_py_s": t2 - t1,
                  "config_s": t3 - t2, "tokenizer_s": t4 - t3, "tokens": len(tok)}))
"""
_AFTER = """
import json, sys, time
t0 = time.perf_counter()
from engine.header_cache import read_gguf_header
from engine.loader import load_tokenizer
from engine.gguf import reader as gguf_reader
import transformers
t1 = time.perf_counter()
from pathlib import Path
folder = read_gguf_header(Path(sys.argv[1]), lambda p: None)
t2 = time.perf_counter()
tok = load_tokenizer(folder)
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "work_s": t3 - t1, "header_s": t2 - t1,
                  "tokenizer_s": t3 - t2, "tokens": len(tok), "parses": gguf_reader.parse_count}))
"""
_LLAMA = """
import json, sys, time
t0 = time.perf_counter()
import llama_cpp
t1 = time.perf_counter()
llm = llama_cpp.Llama(sys.argv[1], vocab_only=True, verbose=False)
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "work_s": t2 - t1, "tokens": llm.n_vocab()}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench tokenizer-open")
    parser.add_argument("--gguf", type=Path, help="a GGUF to measure (default: one generated)")
    parser.add_argument("--tiktoken", type=Path, help="build the file from a qwen.tiktoken")
    parser.add_argument("--work-dir", type=Path, default=Path(tempfile.gettempdir()) / "hearth-tok")
    parser.add_argument("--repeat", type=int, default=1, help="runs per row; the best is kept")
    parser.add_argument("--skip-before", action="store_true", help="skip the slow old path")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    gguf = args.gguf or _generated(args.work_dir, args.tiktoken)
    work = args.work_dir
    rows: dict[str, dict[str, Any]] = {}
    if not args.skip_before:
        rows["before (gguf-py + transformers' GGUF readers)"] = _best(
            _BEFORE, gguf, work, args.repeat
        )
    cache = Path(tempfile.mkdtemp(prefix="cache-", dir=args.work_dir))
    rows["after (first open: one pass)"] = _best(_AFTER, gguf, work, args.repeat)
    _run(_AFTER, gguf, cache)  # write the header cache once
    rows["later open (header cached)"] = _best(_AFTER, gguf, work, args.repeat, cache=cache)
    try:
        rows["llama.cpp (vocab_only load)"] = _best(_LLAMA, gguf, work, args.repeat)
    except RuntimeError as exc:
        rows["llama.cpp (vocab_only load)"] = {"error": str(exc)}
    result = {"gguf": str(gguf), "bytes": gguf.stat().st_size, "rows": rows}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        _print(result)
    return 0


def _generated(work: Path, tiktoken: Path | None) -> Path:
    from bench.synth.vocab import (
        expanded_bpe,
        qwen_tiktoken_vocab,
        with_specials,
        write_vocab_file,
    )

    work.mkdir(parents=True, exist_ok=True)
    name = "qwen25-tiktoken-vocab.gguf" if tiktoken else "generated-151k-vocab.gguf"
    path = work / name
    if not path.exists():
        if tiktoken:
            vocab = qwen_tiktoken_vocab(tiktoken)
        else:
            vocab = with_specials(expanded_bpe(151_643), ["<|im_start|>", "<|im_end|>"], [])
        write_vocab_file(path, vocab, arch="qwen2", pre="qwen2")
    return path


def _best(
    script: str, gguf: Path, work: Path, repeat: int, cache: Path | None = None
) -> dict[str, Any]:
    runs = []
    for _ in range(max(1, repeat)):
        fresh = cache or Path(tempfile.mkdtemp(prefix="cache-", dir=work))
        runs.append(_run(script, gguf, fresh))
    return min(runs, key=lambda r: float(r["work_s"]))


def _run(script: str, gguf: Path, cache: Path) -> dict[str, Any]:
    env = {**os.environ, "HEARTH_CACHE_DIR": str(cache)}
    env.setdefault("OMP_WAIT_POLICY", "passive")
    proc = subprocess.run(
        [sys.executable, "-c", script, str(gguf)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _print(result: dict[str, Any]) -> None:
    print(f"{result['gguf']} ({result['bytes'] / 1e6:.1f} MB file)")
    print(f"{'':48} {'work s':>8} {'import s':>9}  detail")
    for name, row in result["rows"].items():
        if "error" in row:
            print(f"{name:48} error: {row['error']}")
            continue
        detail = ", ".join(
            f"{k[:-2]} {v:.2f} s" if k.endswith("_s") else f"{k} {v}"
            for k, v in row.items()
            if k not in ("work_s", "import_s")
        )
        print(f"{name:48} {row['work_s']:8.2f} {row['import_s']:9.2f}  {detail}")
    print("(a shared 2-core machine under load: figures vary between runs)")


if __name__ == "__main__":
    sys.exit(main())
