"""API keys of remote endpoints: in the OS keyring, or for this session only in memory.

Owns every read and write of an API key. Keys go to the operating system's keychain through
``keyring`` (Secret Service / KWallet on Linux, Keychain on macOS, Credential Manager on
Windows) under the service "Hearth", one entry per endpoint id. They never go to the database,
settings, exports, logs or error messages.

Where no usable keyring backend exists (a headless Linux box: keyring falls back to its
``fail`` or ``null`` backend, or a chainer with nothing inside), `KeyStore.available` is False,
`unavailable_reason` says why in words, and the UI offers `set_session_key`: the key lives in
this process's memory until the app quits, and is never written anywhere.

The Hugging Face Hub token (for gated repos) is kept the same way, under its own entry
(`hub_token`, `set_hub_token`, ...), and passed to `engine.hub` calls by the models dialog.

Does not own which endpoints exist (`app.system.endpoints`) or how keys are typed (the dialog).
"""

from __future__ import annotations

import keyring
import keyring.backend
import keyring.errors
from keyring.backends import chainer, fail, null

SERVICE = "Hearth"
# The Hub token's keyring entry: not an endpoint id (those are "endpoint:<id>").
HUB_TOKEN_USER = "huggingface:token"


class KeyringUnavailableError(Exception):
    """No usable keyring backend, or the keyring refused (locked, D-Bus down, access denied)."""


def _username(endpoint_id: str) -> str:
    return endpoint_id if endpoint_id == HUB_TOKEN_USER else f"endpoint:{endpoint_id}"


def backend_problem(backend: keyring.backend.KeyringBackend) -> str | None:
    """Why ``backend`` cannot keep secrets, or None when it can."""
    if isinstance(backend, fail.Keyring):
        return "no system keyring was found (install and unlock GNOME Keyring, KWallet or similar)"
    if isinstance(backend, null.Keyring):
        return "the keyring is switched off (the 'null' backend is configured)"
    if isinstance(backend, chainer.ChainerBackend):
        # An empty chain "stores" by doing nothing: the key would be silently lost.
        problems = [backend_problem(b) for b in backend.backends]
        if not problems:
            return "no system keyring was found (the keyring chain is empty)"
        if all(problems):
            return problems[0]
    return None


class KeyStore:
    """Per-endpoint API keys: keyring first, then keys given for this session only."""

    def __init__(self, backend: keyring.backend.KeyringBackend | None = None) -> None:
        # None: whatever keyring picks for this machine (tests pass an in-memory backend).
        self._backend = backend
        self._session: dict[str, str] = {}

    @property
    def backend(self) -> keyring.backend.KeyringBackend:
        return self._backend if self._backend is not None else keyring.get_keyring()

    @property
    def available(self) -> bool:
        return backend_problem(self.backend) is None

    def unavailable_reason(self) -> str | None:
        """A sentence for the UI when keys cannot be saved, else None."""
        return backend_problem(self.backend)

    def get(self, endpoint_id: str) -> str | None:
        """The key for ``endpoint_id``: a session key if one was given, else the keyring's."""
        if endpoint_id in self._session:
            return self._session[endpoint_id]
        if not self.available:
            return None
        try:
            return self.backend.get_password(SERVICE, _username(endpoint_id))
        except keyring.errors.KeyringError as exc:
            raise KeyringUnavailableError(_describe(exc, "read")) from None

    def set(self, endpoint_id: str, key: str) -> None:
        """Save ``key`` in the keyring. Raises `KeyringUnavailableError` when it cannot."""
        problem = self.unavailable_reason()
        if problem is not None:
            raise KeyringUnavailableError(problem)
        try:
            self.backend.set_password(SERVICE, _username(endpoint_id), key)
        except keyring.errors.KeyringError as exc:
            raise KeyringUnavailableError(_describe(exc, "save")) from None
        self._session.pop(endpoint_id, None)

    def set_session_key(self, endpoint_id: str, key: str) -> None:
        """Remember ``key`` in memory until the app quits; never written to disk."""
        self._session[endpoint_id] = key

    def has_session_key(self, endpoint_id: str) -> bool:
        return endpoint_id in self._session

    def delete(self, endpoint_id: str) -> None:
        """Forget the key everywhere (missing entries are fine)."""
        self._session.pop(endpoint_id, None)
        if not self.available:
            return
        try:
            self.backend.delete_password(SERVICE, _username(endpoint_id))
        except keyring.errors.PasswordDeleteError:
            pass  # nothing was stored
        except keyring.errors.KeyringError as exc:
            raise KeyringUnavailableError(_describe(exc, "delete")) from None

    # -- the Hugging Face Hub token (gated repos) -------------------------------------------
    def hub_token(self) -> str | None:
        """The saved Hub token, or None (then `engine.hub` falls back to ``HF_TOKEN``)."""
        try:
            return self.get(HUB_TOKEN_USER)
        except KeyringUnavailableError:
            return None  # a public repo still works; a gated one says it needs a token

    def set_hub_token(self, token: str) -> None:
        self.set(HUB_TOKEN_USER, token)

    def set_session_hub_token(self, token: str) -> None:
        self.set_session_key(HUB_TOKEN_USER, token)

    def delete_hub_token(self) -> None:
        self.delete(HUB_TOKEN_USER)


def _describe(exc: Exception, action: str) -> str:
    # The exception text comes from the keyring backend, never from the key itself.
    return f"the system keyring could not {action} the key: {exc or type(exc).__name__}"
