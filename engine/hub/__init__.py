"""Models from the Hugging Face Hub (or a mirror) and on this machine: find, judge, fetch, list.

Torch-free and Qt-free, so the app may import it directly: `catalogue` (the curated list in
assets/catalogue.json), `search` (Hub search and a repo's GGUF files), `remote_header` (a GGUF
header read by HTTP range requests), `summary` (what one file is), `fit` (will it fit, how fast),
`download` (resumable, sha256-verified, atomic) and `library` (the models folder and the GGUFs
other apps already downloaded). Does not own loading or running a model (`engine.engine`).
"""
