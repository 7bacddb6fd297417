"""Sentence embeddings for retrieval (`engine.embed.embedder`)."""
