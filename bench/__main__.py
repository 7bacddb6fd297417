"""`python -m bench`: figures for this machine, next to the peers (transformers, llama.cpp).

Owns only the dispatch: each subcommand's module has either ``add_parser(subparsers)`` and
``run(args) -> int`` (as in `engine.__main__`) or ``main(argv) -> int``, and is imported only
when chosen (torch and Qt are slow to import). Errors the user can act on print one line to
stderr and exit 2. The product packages (`engine`, `app`) never import this package.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = {
    "engine": ("bench.engine_speed", "Decode/prefill speed next to transformers and llama.cpp"),
    "peers": ("bench.peers", "Every contender on the bundled model, with ratios"),
    "perplexity": ("bench.perplexity_llama", "llama.cpp's perplexity on the engine's token ids"),
    "ui": ("bench.ui", "GUI stall while a reply streams, tokens painted per second"),
    "markdown": ("bench.markdown", "What rendering model output costs on this machine"),
    "open": ("bench.open", "First/later open, peak RSS and decode next to llama.cpp"),
    "kernels": ("bench.kernels", "MatMulNBits bit widths ORT runs, and a decode pass per layout"),
    "tokenizer-open": ("bench.tokenizer_open", "Reading a real-size vocabulary on first open"),
    "tokenizer-load": ("bench.tokenizer_load", "Later open's tokenizer: engine vs transformers"),
    "serve-batch": ("bench.serve_batch", "Server tok/s, TTFT with 1/4/8 clients next to llama.cpp"),
    "grammar": ("bench.grammar", "Decode tok/s with and without a JSON-schema constraint"),
    "sampling": ("bench.sampling", "Per-token sampling cost (numpy) next to transformers'"),
    "resume": ("bench.resume", "Next message of a long chat after a restart, saved cache or not"),
    "docs": ("bench.docs", "Document indexing chunks/s, embeddings/s, recall@5 zh/en by mode"),
    "docs-prefill": ("bench.docs_prefill", "TTFT of questions about an attached document"),
    "hostile-headers": ("bench.hostile_headers", "A 10^6-tensor header: each reader's cost"),
    "moe-scaling": ("bench.moe_scaling", "MoE decode time next to a dense file of its active size"),
    "contention": ("bench.contention", "Decode tok/s idle and beside busy programs, vs llama.cpp"),
    "prefill": ("bench.prefill", "Prompt tok/s at document lengths (512, 2000) vs llama.cpp"),
    "depth": ("bench.depth", "Decode tok/s at context depths (100, 2000) vs llama.cpp"),
    "speculation": ("bench.speculation", "Plain vs prompt lookup (quotes, code), greedy or seeded"),
    "draft-pairing": ("bench.draft_pairing", "Would a small draft model speed a bigger one up?"),
    "mtp": ("bench.mtp", "Qwen3.5 MTP drafting: draft and verify cost, break-even acceptance"),
    "gpu": ("bench.gpu", "Decode/prefill on a CUDA GPU: ORT's CUDA EP next to llama.cpp (CUDA)"),
    "language": ("bench.language", "Language detectors' accuracy on short mixed zh/en questions"),
    "safety": ("bench.safety", "A reply's time with and without the safety guard reviewing it"),
    "vision": ("bench.vision", "An image's encode time (Gemma 4 E2B, Qwen3.5-0.8B) vs libmtmd"),
    "vision-prefill": ("bench.vision_prefill", "An image's tokens' prefill vs libmtmd's decode"),
}


def parse_args(name: str, rest: list[str]) -> argparse.Namespace:
    """``rest`` parsed by subcommand ``name``'s own parser (an ``add_parser`` style module)."""
    parser = argparse.ArgumentParser(prog="python -m bench")
    module = importlib.import_module(COMMANDS[name][0])
    module.add_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args([name, *rest])


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        names = "\n".join(f"  {name:<11} {help_text}" for name, (_, help_text) in COMMANDS.items())
        print(f"usage: python -m bench COMMAND [options]\n\ncommands:\n{names}", file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    name, rest = argv[0], argv[1:]
    module = importlib.import_module(COMMANDS[name][0])
    from engine.errors import EngineError

    try:
        if hasattr(module, "add_parser"):  # argparse subcommand style, as in `engine.__main__`
            return int(module.run(parse_args(name, rest)) or 0)
        return int(module.main(rest) or 0)
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
