"""Typed errors raised by the engine.

Owns the error hierarchy that crosses the engine/app boundary. A normal end of generation
(EOS, length, stop string, cancel) is a finish reason, never an exception. Every message names
the problem and, where there is one, the offending value, so the app can show it as is.
Imports nothing heavy: the app imports this module.
"""

from __future__ import annotations


class EngineError(Exception):
    """Base class of every error the engine raises on purpose."""


class InvalidParamsError(EngineError, ValueError):
    """A sampling or request parameter is out of range ("top_p must be in (0, 1], got 1.5")."""


class ModelLoadError(EngineError):
    """The model could not be found, read, converted or placed on the device."""


class ModelNotFoundError(ModelLoadError):
    """The path does not exist or holds no model files."""


class UnsupportedModelError(ModelLoadError):
    """The files are a model, but of an architecture or format this engine cannot run."""


class CorruptModelError(ModelLoadError):
    """The model file exists but is truncated or unreadable."""


class InsufficientMemoryError(ModelLoadError):
    """Weights plus KV cache for the requested context will not fit in available memory."""


class ContextOverflowError(EngineError):
    """The prompt cannot fit the context window even after dropping every droppable turn."""


class BackendUnavailableError(EngineError):
    """A remote endpoint cannot be reached (refused, timeout, DNS)."""


class GuardUnavailableError(EngineError):
    """The safety guard could not give a verdict: its endpoint is down, its model failed to
    run, or it answered something other than a verdict. The message says which."""


class RemoteError(EngineError):
    """A remote endpoint answered with an error the user can act on.

    ``status`` is the HTTP status (401, 403, 404, 429, ...) or None for a malformed stream.
    Messages never include API keys.
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class EngineClosedError(EngineError):
    """The engine was shut down; no further requests are accepted."""


class HubError(EngineError):
    """A Hugging Face Hub (or mirror) request for a model failed in a way the user can act on."""


class HubOfflineError(HubError, BackendUnavailableError):
    """The Hub (or the mirror set as HF_ENDPOINT) cannot be reached: offline, refused, timeout."""


class RepoNotFoundError(HubError):
    """No such repository on the Hub (or it is private and no token was given)."""


class GatedRepoError(HubError):
    """The repository is gated: accept its licence on the Hub and give a token (HF_TOKEN)."""


class RemoteFileNotFoundError(HubError):
    """The repository exists but has no such file (HTTP 404), or no file matches a quant tag."""


class DiskFullError(EngineError):
    """Not enough free disk space for a download (checked before it starts, and on write)."""


class ChecksumMismatchError(EngineError):
    """A downloaded file failed its sha256 check against the Hub's LFS hash; it was deleted."""


class NotGGUFError(CorruptModelError):
    """The file (local or remote) does not start with the GGUF magic: it is not a GGUF model."""


class DownloadCancelled(EngineError):
    """The user cancelled a download; its partial file is kept so it can resume later."""


class InvalidImageError(EngineError, ValueError):
    """An attached image cannot be used: unreadable, truncated, a decompression bomb, too large
    or too small ("photo.png is truncated: ..."). The message names the file and the reason."""
