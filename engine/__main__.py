"""`python -m engine`: generate / tokenize / perplexity / serve / pull / models / inspect / doctor /
encode-image.

Owns only the dispatch: each subcommand lives in `engine/cli/<name>.py` with
`add_parser(subparsers)` and `run(args) -> int`, imported only when chosen (torch is slow
to import). Errors the user can act on print one line to stderr and exit 2. Benchmarks live
in `bench/` (`python -m bench`), outside the product packages.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from engine.errors import EngineError
from engine.hub.names import printable

COMMANDS = {
    "generate": "Generate a reply (local model or --base-url endpoint)",
    "tokenize": "Print the token ids of a text",
    "perplexity": "Measure perplexity of a text (quality check for fast paths)",
    "serve": "Serve the engine over an OpenAI-compatible HTTP API",
    "pull": "Download a GGUF model from the Hugging Face Hub (or HF_ENDPOINT)",
    "models": "List the GGUF models on this machine",
    "inspect": "Describe a GGUF file or URL from its header alone",
    "doctor": "Check this install (CPU, compiler, Qt, keyring, disk, cache, models) with fixes",
    "encode-image": "Encode an image with a vision projector (mmproj), rows to .npy",
}


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engine", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = next((a for a in argv if a in COMMANDS), None)
    for name, help_text in COMMANDS.items():
        if name == chosen:
            module = importlib.import_module(f"engine.cli.{_module(name)}")
            module.add_parser(sub)
        else:
            sub.add_parser(name, help=help_text)
    return parser


def _module(command: str) -> str:
    return command.replace("-", "_")  # encode-image -> engine/cli/encode_image.py


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv).parse_args(argv)
    module = importlib.import_module(f"engine.cli.{_module(args.command)}")

    try:
        return int(module.run(args) or 0)
    except EngineError as exc:
        print(f"error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
