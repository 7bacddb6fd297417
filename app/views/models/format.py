"""Words and colours for model facts: sizes, verdicts, speeds, sources, and Hub errors.

Owns the translated text the models dialog and the download dialog show for numbers and
verdicts that come from `engine.hub` (a `Fit`, a `ModelSummary`), and the plain-words mapping
of Hub errors (offline, unknown repo, gated repo, 404, disk full, checksum). Pure functions; no
widgets, no I/O.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from PySide6.QtCore import QCoreApplication
from PySide6.QtGui import QColor

from engine.errors import (
    ChecksumMismatchError,
    DiskFullError,
    DownloadCancelled,
    GatedRepoError,
    HubError,
    HubOfflineError,
    NotGGUFError,
    RemoteFileNotFoundError,
    RepoNotFoundError,
)

VERDICT_COLORS = {"fits": "#2e8b57", "tight": "#c77700", "wont_fit": "#c0392b"}


def format_bytes(n: int | None) -> str:
    """1536 -> "1.5 KB"; binary units, as file managers and RAM figures are usually shown."""
    if n is None or n < 0:
        return "—"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":  # "1016 MB" reads worse than "0.99 GB"
            return (
                f"{value:.0f} {unit}"
                if unit == "B"
                else f"{value:.{2 if value < 1 else 1}f} {unit}"
            )
        value /= 1024
    return f"{value:.1f} GB"  # unreachable; keeps type checkers calm


def format_params(parameters: int | float | None) -> str:
    """7.6e9 -> "7.6B" (parameter counts are written this way in model names)."""
    if not parameters:
        return "—"
    if parameters >= 1e9:
        return f"{parameters / 1e9:.1f}B"
    if parameters >= 1e6:
        return f"{parameters / 1e6:.0f}M"
    return f"{parameters / 1e3:.0f}K"


def format_speed(bytes_per_second: float | None) -> str:
    if bytes_per_second is None:
        return "—"
    return QCoreApplication.translate("Models", "{0}/s").format(format_bytes(int(bytes_per_second)))


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return QCoreApplication.translate("Models", "estimating time left…")
    seconds = int(seconds)
    if seconds < 60:
        return QCoreApplication.translate("Models", "{0} s left").format(seconds)
    if seconds < 3600:
        return QCoreApplication.translate("Models", "about {0} min left").format(
            round(seconds / 60)
        )
    return QCoreApplication.translate("Models", "about {0} h {1} min left").format(
        seconds // 3600, seconds % 3600 // 60
    )


def verdict_text(verdict: str) -> str:
    return {
        "fits": QCoreApplication.translate("Models", "Fits"),
        "tight": QCoreApplication.translate("Models", "Tight"),
        "wont_fit": QCoreApplication.translate("Models", "Won't fit"),
    }.get(verdict, verdict)


def verdict_color(verdict: str) -> QColor:
    return QColor(VERDICT_COLORS.get(verdict, "#777777"))


def ram_text(fit: Any) -> str:
    """'5.1 GB of 12.3 GB' (RAM needed of RAM available) from an `engine.hub.fit.Fit`."""
    return QCoreApplication.translate("Models", "{0} of {1}").format(
        format_bytes(fit.ram_needed_bytes), format_bytes(fit.ram_available_bytes)
    )


def tok_s_text(tok_s: float | None) -> str:
    if not tok_s:
        return "—"
    return QCoreApplication.translate("Models", "≈ {0} tok/s").format(
        f"{tok_s:.0f}" if tok_s >= 10 else f"{tok_s:.1f}"
    )


def fast_path_text(fast: bool) -> str:
    return (
        QCoreApplication.translate("Models", "Yes")
        if fast
        else QCoreApplication.translate("Models", "No (slower path)")
    )


def last_used_text(timestamp: float | None) -> str:
    if not timestamp:
        return QCoreApplication.translate("Models", "Never")
    return dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def source_label(source: str) -> str:
    return {
        "hearth": QCoreApplication.translate("Models", "Hearth"),
        "lmstudio": "LM Studio",
        "gpt4all": "GPT4All",
        "ollama": "Ollama",
        "hub": QCoreApplication.translate("Models", "Hugging Face Hub"),
        "file": QCoreApplication.translate("Models", "File"),
        "in use": QCoreApplication.translate("Models", "Loaded now"),
    }.get(source, source)


def hub_error_text(exc: BaseException) -> tuple[str, bool]:
    """(plain words for ``exc``, whether the fix is the Hub token field)."""
    detail = str(exc)
    if isinstance(exc, GatedRepoError):
        text = QCoreApplication.translate(
            "Models",
            "This model is gated: accept its licence on the Hub, then enter your Hugging Face "
            "token in the Hub tab.",
        )
        return text, True
    known: list[tuple[type[BaseException], str]] = [
        (
            HubOfflineError,
            QCoreApplication.translate(
                "Models",
                "The Hub cannot be reached. Check your connection, or set a mirror "
                "(for example https://hf-mirror.com) in the Hub tab.",
            ),
        ),
        (
            RepoNotFoundError,
            QCoreApplication.translate(
                "Models",
                "No such model repository on the Hub (or it is private: a token is needed).",
            ),
        ),
        (
            RemoteFileNotFoundError,
            QCoreApplication.translate("Models", "The Hub has no such file (404)."),
        ),
        (
            DiskFullError,
            QCoreApplication.translate(
                "Models", "There is not enough free disk space for this download."
            ),
        ),
        (
            ChecksumMismatchError,
            QCoreApplication.translate(
                "Models", "The downloaded file failed its sha256 check and was deleted. Try again."
            ),
        ),
        (NotGGUFError, QCoreApplication.translate("Models", "This file is not a GGUF model.")),
        (DownloadCancelled, QCoreApplication.translate("Models", "The download was paused.")),
        (HubError, QCoreApplication.translate("Models", "The Hub refused the request.")),
        (OSError, QCoreApplication.translate("Models", "A file could not be read or written.")),
    ]
    headline = next((h for kind, h in known if isinstance(exc, kind)), None)
    if headline is None:
        return QCoreApplication.translate("Models", "Something went wrong: {0}").format(
            detail or type(exc).__name__
        ), False
    if isinstance(exc, HubOfflineError):  # the engine's words repeat the same advice
        return headline, False
    return (f"{headline}\n{detail}" if detail else headline), False
