"""Reading GGUF files: the header check, metadata, and repacking quantised weights."""
