"""One module per `python -m engine` subcommand, each with `add_parser` and `run`."""
