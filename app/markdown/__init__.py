"""Rendering model output: Markdown to rich text, linkifying and code highlighting."""
