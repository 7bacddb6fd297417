"""API keys live in the keyring (or this session's memory), and nowhere else.

An in-memory keyring backend stands in for the OS keychain (there is none on a CI box); the
files Hearth writes are real and are searched byte by byte for the key.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import keyring
import keyring.backend
import keyring.errors
import pytest
from keyring.backends import chainer, fail, null

from app.system.endpoints import Endpoint, EndpointList
from app.system.secrets import SERVICE, KeyringUnavailableError, KeyStore, backend_problem

KEY = "sk-test-9f8e7d6c5b4a39281706"


class MemoryKeyring(keyring.backend.KeyringBackend):
    """A keyring that keeps passwords in a dict: nothing touches the disk."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if (service, username) not in self.entries:
            raise keyring.errors.PasswordDeleteError("not found")
        del self.entries[(service, username)]


class LockedKeyring(MemoryKeyring):
    def set_password(self, service: str, username: str, password: str) -> None:
        raise keyring.errors.KeyringLocked("the collection is locked")


class EmptyChain(chainer.ChainerBackend):
    backends: ClassVar[list] = []  # what keyring builds when nothing is viable


@pytest.fixture
def memory_keyring():
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


def files_containing(root: Path, secret: str) -> list[Path]:
    needle = secret.encode()
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_key_round_trips_through_the_process_keyring(memory_keyring: MemoryKeyring) -> None:
    keys = KeyStore()  # uses keyring.get_keyring(), as the app does
    assert keys.available and keys.unavailable_reason() is None
    keys.set("ep1", KEY)
    assert memory_keyring.entries == {(SERVICE, "endpoint:ep1"): KEY}
    assert KeyStore().get("ep1") == KEY  # a fresh store (next app start) reads it back
    keys.delete("ep1")
    assert keys.get("ep1") is None
    keys.delete("ep1")  # deleting a missing key is not an error


@pytest.mark.parametrize(
    "backend, words",
    [
        (fail.Keyring(), "no system keyring"),
        (null.Keyring(), "switched off"),
        (EmptyChain(), "empty"),
    ],
)
def test_unusable_backends_are_detected_and_explained(backend, words: str) -> None:
    keys = KeyStore(backend)
    assert not keys.available
    assert words in (keys.unavailable_reason() or "")
    with pytest.raises(KeyringUnavailableError, match=words):
        keys.set("ep1", KEY)
    assert keys.get("ep1") is None


def test_a_chain_with_a_working_backend_is_usable() -> None:
    class OneChain(chainer.ChainerBackend):
        backends: ClassVar[list] = [MemoryKeyring()]

    assert backend_problem(OneChain()) is None


def test_session_key_without_keyring_stays_in_memory(tmp_path: Path) -> None:
    keys = KeyStore(fail.Keyring())
    endpoints = EndpointList(tmp_path / "endpoints.json")
    endpoint = endpoints.add(Endpoint("Team vLLM", "http://gpu-box:8000/v1", "llama-3"))
    keys.set_session_key(endpoint.id, KEY)
    assert keys.get(endpoint.id) == KEY and keys.has_session_key(endpoint.id)
    assert KeyStore(fail.Keyring()).get(endpoint.id) is None  # gone with the session
    assert files_containing(tmp_path, KEY) == []
    assert "llama-3" in (tmp_path / "endpoints.json").read_text()


def test_a_locked_keyring_raises_a_clear_error_without_the_key() -> None:
    keys = KeyStore(LockedKeyring())
    with pytest.raises(KeyringUnavailableError) as info:
        keys.set("ep1", KEY)
    assert "locked" in str(info.value) and KEY not in str(info.value)


def test_endpoints_file_holds_no_key_and_survives_reload(
    tmp_path: Path, memory_keyring: MemoryKeyring
) -> None:
    path = tmp_path / "endpoints.json"
    endpoints = EndpointList(path)
    endpoint = endpoints.add(Endpoint("Work", "http://10.0.0.5:8000/v1", "qwen", kind="vllm"))
    KeyStore().set(endpoint.id, KEY)
    endpoints.update(replace(endpoint, model="qwen-2"))
    again = EndpointList(path)
    assert [(e.name, e.model, e.kind, e.id) for e in again] == [
        ("Work", "qwen-2", "vllm", endpoint.id)
    ]
    assert files_containing(tmp_path, KEY) == []
