"""Hearth's desktop app (PySide6 + qasync) over the engine. Never imports torch."""
