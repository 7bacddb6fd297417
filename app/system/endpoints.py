"""Saved remote endpoints: name, base URL, model and kind, as a small JSON file.

Owns ``endpoints.json`` in the app's data folder (`app.system.paths`): loading, validating, adding,
editing and removing entries, written atomically so a crash never leaves half a file. The API
key is NOT here: it lives in the OS keyring under the endpoint's id (`app.system.secrets`). Does not
talk to the network; the dialog asks the bridge for that.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from app.system import paths

FILE_NAME = "endpoints.json"
FORMAT_VERSION = 1
# The kinds `engine.remote.ENDPOINT_KINDS` knows ("auto" guesses from the server); kept in
# step by a test, because the app may not import the engine runtime.
KINDS = ("auto", "generic", "hearth", "vllm", "sglang", "llamacpp", "ollama", "tgi", "openai")


REMOTE_PREFIX = "remote:"  # model specs in settings/the picker: "remote:<endpoint id>"


def model_spec(endpoint: Endpoint) -> str:
    """How the model picker and settings name a remote endpoint (an id: renames are safe)."""
    return REMOTE_PREFIX + endpoint.id


def endpoint_id_from_spec(spec: str) -> str | None:
    """The endpoint id of a ``remote:<id>`` model spec; None for a local model spec."""
    return spec[len(REMOTE_PREFIX) :] if spec.startswith(REMOTE_PREFIX) else None


class EndpointError(ValueError):
    """An endpoint field is invalid, or the endpoints file cannot be read or written."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One saved endpoint. ``id`` keys its API key in the keyring."""

    name: str
    base_url: str
    model: str
    kind: str = "auto"
    id: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            object.__setattr__(self, "id", uuid.uuid4().hex)
        object.__setattr__(self, "name", self.name.strip())
        object.__setattr__(self, "base_url", self.base_url.strip().rstrip("/"))
        object.__setattr__(self, "model", self.model.strip())
        if not self.name:
            raise EndpointError("the endpoint needs a name")
        if not self.model:
            raise EndpointError("the endpoint needs a model name (list the server's models)")
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise EndpointError(
                f"the base URL must start with http:// or https://, got {self.base_url!r}"
            )
        if parts.username or parts.password:
            raise EndpointError("put the API key in the key field, not in the URL")
        if self.kind not in KINDS:
            raise EndpointError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")

    @property
    def label(self) -> str:
        """The model picker's text for this endpoint."""
        return f"{self.name} — {self.model}"

    @property
    def engine_kind(self) -> str | None:
        """The ``kind`` argument for `engine.remote.RemoteEngine` (None: guess)."""
        return None if self.kind == "auto" else self.kind


class EndpointList:
    """The saved endpoints, in the order the user added them."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else paths.data_dir() / FILE_NAME
        self._items: list[Endpoint] = self._load()

    def __iter__(self) -> Iterator[Endpoint]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def get(self, endpoint_id: str) -> Endpoint | None:
        return next((e for e in self._items if e.id == endpoint_id), None)

    def add(self, endpoint: Endpoint) -> Endpoint:
        if self.get(endpoint.id) is not None:
            raise EndpointError(f"an endpoint with id {endpoint.id} already exists")
        self._check_name_free(endpoint)
        self._items.append(endpoint)
        self.save()
        return endpoint

    def update(self, endpoint: Endpoint) -> Endpoint:
        index = next((i for i, e in enumerate(self._items) if e.id == endpoint.id), None)
        if index is None:
            raise EndpointError(f"no endpoint with id {endpoint.id}")
        self._check_name_free(endpoint)
        self._items[index] = endpoint
        self.save()
        return endpoint

    def remove(self, endpoint_id: str) -> None:
        """Drop the entry (the caller also deletes its key from the keyring)."""
        self._items = [e for e in self._items if e.id != endpoint_id]
        self.save()

    def save(self) -> None:
        data = {"version": FORMAT_VERSION, "endpoints": [asdict(e) for e in self._items]}
        paths.ensure_dir(self.path.parent)
        tmp = self.path.with_suffix(".json.tmp")
        try:
            tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as exc:
            raise EndpointError(f"cannot save {self.path}: {exc.strerror or exc}") from None

    def _check_name_free(self, endpoint: Endpoint) -> None:
        for other in self._items:
            if other.id != endpoint.id and other.name.casefold() == endpoint.name.casefold():
                raise EndpointError(f"an endpoint named {endpoint.name!r} already exists")

    def _load(self) -> list[Endpoint]:
        if not self.path.exists():
            return []
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            fields = {"name", "base_url", "model", "kind", "id"}
            return [
                Endpoint(**{k: v for k, v in item.items() if k in fields})
                for item in data.get("endpoints", [])
            ]
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise EndpointError(f"cannot read {self.path}: {exc}") from None
