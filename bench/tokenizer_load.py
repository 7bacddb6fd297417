"""`python -m bench tokenizer-load`: loading a .gguf's cached tokenizer on a later open.

Each row runs in a fresh process on the file's header cache (written first if missing), so
import costs count as a user pays them:

- ``engine``: `engine.tokenizer_runtime.EngineTokenizer` (what `engine.loader` loads now);
- ``transformers``: transformers' ``TokenizersBackend`` over the same two files (what the
  loader did before; the same tokenizer, tests/engine/loop/test_tokenizer_runtime.py);
- ``tokenizers, merges as pairs`` / ``as strings``: `tokenizers.Tokenizer.from_file` alone on
  the cached tokenizer.json written with ``["left", "right"]`` merges (header format 3) and
  with ``"left right"`` ones (format 4);
- ``llama.cpp``: llama-cpp-python loading the .gguf with ``vocab_only=True`` (the peer).

Columns: import seconds, load seconds (wall), the process's CPU seconds (user + system, import
included: on a shared machine wall time inflates, CPU time much less) and whether transformers
ended up imported. The best of ``--repeat`` runs per row. ``--json`` prints JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

_PRELUDE = """
import json, resource, sys, time
from pathlib import Path
folder = Path(sys.argv[1])
t0 = time.perf_counter()
"""
_REPORT = """
t2 = time.perf_counter()
use = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "cpu_s": use.ru_utime + use.ru_stime,
                  "transformers": "transformers" in sys.modules, "tokens": n}))
"""
ROWS = {
    "engine (EngineTokenizer)": """
from engine.tokenizer_runtime import EngineTokenizer
t1 = time.perf_counter()
tok = EngineTokenizer.from_folder(folder)
n = len(tok)
""",
    "transformers (TokenizersBackend, before)": """
from transformers import TokenizersBackend
t1 = time.perf_counter()
config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
config.pop("tokenizer_class", None)
tok = TokenizersBackend(tokenizer_file=str(folder / "tokenizer.json"), **config)
n = len(tok)
""",
    "tokenizers, merges as pairs": """
from tokenizers import Tokenizer
t1 = time.perf_counter()
n = Tokenizer.from_file(sys.argv[2]).get_vocab_size()
""",
    "tokenizers, merges as strings": """
from tokenizers import Tokenizer
t1 = time.perf_counter()
n = Tokenizer.from_file(sys.argv[3]).get_vocab_size()
""",
    "llama.cpp (vocab_only, the .gguf)": """
import llama_cpp
t1 = time.perf_counter()
n = llama_cpp.Llama(sys.argv[4], vocab_only=True, verbose=False).n_vocab()
""",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench tokenizer-load")
    parser.add_argument("model", nargs="?", default="bundled", help="a .gguf, or bundled")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row; the best is kept")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from engine.header_cache import read_gguf_header
    from engine.models import resolve_model

    gguf = resolve_model(args.model).path
    folder = read_gguf_header(gguf, lambda _p: None)
    scratch = Path(tempfile.mkdtemp(prefix="hearth-tokload-"))
    pairs, strings = _layouts(folder / "tokenizer.json", scratch)
    rows = {
        name: _best(code, [str(folder), str(pairs), str(strings), str(gguf)], args.repeat)
        for name, code in ROWS.items()
    }
    result = {"gguf": str(gguf), "folder": str(folder), "rows": rows}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        _print(result)
    return 0


def _layouts(tokenizer_json: Path, scratch: Path) -> tuple[Path, Path]:
    """The cached tokenizer.json re-written with its merges as pairs and as strings."""
    body = json.loads(tokenizer_json.read_text(encoding="utf-8"))
    merges = [m.split(" ", 1) if isinstance(m, str) else m for m in body["model"]["merges"]]
    out = []
    for name, layout in (("pairs", merges), ("strings", [" ".join(m) for m in merges])):
        path = scratch / f"tokenizer-{name}.json"
        path.write_text(
            json.dumps({**body, "model": {**body["model"], "merges": layout}}, ensure_ascii=False),
            encoding="utf-8",
        )
        out.append(path)
    return out[0], out[1]


def _best(code: str, argv: list[str], repeat: int) -> dict[str, Any]:
    runs = []
    for _ in range(max(1, repeat)):
        proc = subprocess.run(
            [sys.executable, "-c", _PRELUDE + code + _REPORT, *argv],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"}
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return min(runs, key=lambda r: float(r["import_s"] + r["load_s"]))


def _print(result: dict[str, Any]) -> None:
    print(f"{result['gguf']}\n(header cache {result['folder']})")
    print(f"{'':44s} {'import s':>9s} {'load s':>8s} {'CPU s':>7s}  transformers  tokens")
    for name, row in result["rows"].items():
        if "error" in row:
            print(f"{name:44s} error: {row['error']}")
            continue
        print(
            f"{name:44s} {row['import_s']:9.2f} {row['load_s']:8.2f} {row['cpu_s']:7.2f}  "
            f"{'yes' if row['transformers'] else 'no':>12s}  {row['tokens']}"
        )


if __name__ == "__main__":
    raise SystemExit(main())
