"""OpenAI-compatible remote backend: vLLM, TGI, llama.cpp's server, Ollama, Hearth's own server.

Owns turning a `GenerationRequest` into one streamed ``POST /chat/completions`` (only the
sampling fields the endpoint's kind honours, named as `engine.params.PARAMS` says),
``GET /models``, and the endpoint kinds.
Reading the stream and mapping errors is `engine.remote.stream`. Does not own where keys are
stored (the app's keyring module) or which endpoint is chosen (the app's endpoint list).

Why httpx and not the official ``openai`` client: the client reads ambient credentials and
headers from the environment (OPENAI_API_KEY, OPENAI_ORG_ID, OPENAI_PROJECT_ID,
OPENAI_CUSTOM_HEADERS) and would send them to whatever third-party endpoint the user added;
it refuses keyless local servers unless given a private flag; and its stream wrapper hides
the response we must close on cancel and blurs malformed data with other errors. A strict
SSE reader is ~30 lines. (The tests still drive our server with the official client.)

Error messages never contain the API key: server texts are scrubbed before they are shown.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from engine.errors import EngineClosedError, InvalidParamsError, RemoteError
from engine.params import PARAMS, REMOTE_EXTENDED_PARAMS, REMOTE_STANDARD_PARAMS
from engine.remote.images import with_images
from engine.remote.response_format import response_format_fields
from engine.remote.stream import (
    StreamReader,
    raise_for_status,
    safe_url,
    shutdown_on_cancel,
    transport_error,
)
from engine.remote.tools import tool_fields, wire_message
from engine.types import (
    Event,
    GenerationRequest,
    LiveParams,
    Message,
    ModelInfo,
)

# What each kind of server honours (`engine.params`: a row's ``remote``). The UI greys the rest.
_BASE_PARAMS = REMOTE_STANDARD_PARAMS
_ALL_PARAMS = REMOTE_EXTENDED_PARAMS
ENDPOINT_KINDS: dict[str, frozenset[str]] = {
    "generic": _ALL_PARAMS,  # unknown server: send everything, most ignore what they lack
    "hearth": _ALL_PARAMS,
    "vllm": _ALL_PARAMS,
    "sglang": _ALL_PARAMS,
    "llamacpp": _ALL_PARAMS,
    "openai": _BASE_PARAMS,  # api.openai.com rejects unknown sampling fields
    "ollama": _BASE_PARAMS,  # its /v1 layer drops top_k/min_p/repeat_penalty
    "tgi": _BASE_PARAMS,
}
_OWNED_BY_KIND = {
    "vllm": "vllm",
    "sglang": "sglang",
    "llamacpp": "llamacpp",
    "hearth": "hearth",
    "library": "ollama",
    "ollama": "ollama",
    "tgi": "tgi",
    "openai": "openai",
    "system": "openai",
    "openai-internal": "openai",
}


@dataclass(frozen=True, slots=True)
class RemoteModel:
    """One entry of an endpoint's ``/models`` list."""

    id: str
    owned_by: str = ""
    context_window: int = 0  # 0 when the server does not say


def normalize_base_url(base_url: str) -> str:
    """``http://host:8000`` -> ``http://host:8000/v1``; a URL with a path is kept as given."""
    url = base_url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidParamsError(f"base URL must start with http:// or https://, got {base_url!r}")
    if parts.path in ("", "/"):
        url = urlunsplit((parts.scheme, parts.netloc, "/v1", "", ""))
    return url


def guess_kind(base_url: str, owned_by: str = "") -> str:
    """The endpoint kind from its host or a model's ``owned_by`` (see `ENDPOINT_KINDS`)."""
    host = urlsplit(base_url).hostname or ""
    if host == "api.openai.com":
        return "openai"
    if urlsplit(base_url).port == 11434:
        return "ollama"
    return _OWNED_BY_KIND.get(owned_by.strip().lower(), "generic")


def list_models(
    base_url: str, api_key: str | None = None, timeout: float = 15.0
) -> list[RemoteModel]:
    """``GET /models`` of an endpoint (for the endpoint dialog's model picker)."""
    url = normalize_base_url(base_url)
    with httpx.Client(timeout=timeout, trust_env=False) as client:
        try:
            response = client.get(f"{url}/models", headers=_headers(api_key))
        except httpx.HTTPError as exc:
            raise transport_error(exc, url, api_key) from None
        raise_for_status(response, url, api_key, model=None)
        try:
            data = response.json()["data"]
            return [_parse_model(item) for item in data]
        except (ValueError, KeyError, TypeError):
            raise RemoteError(f"{safe_url(url)}/models did not return a model list") from None


def _parse_model(item: dict[str, Any]) -> RemoteModel:
    context = item.get("max_model_len") or (item.get("meta") or {}).get("n_ctx_train") or 0
    return RemoteModel(
        id=str(item["id"]),
        owned_by=str(item.get("owned_by") or ""),
        context_window=int(context) if isinstance(context, int) else 0,
    )


class RemoteEngine:
    """A `engine.types.Backend` over an OpenAI-compatible HTTP endpoint.

    Construction does no I/O; `probe` asks ``/models`` for the kind and context window.
    Parameters are read once per request (a remote server cannot change them mid-stream),
    so ``live`` is ignored.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        kind: str | None = None,
    ) -> None:
        if not model.strip():
            raise InvalidParamsError("model name must not be empty")
        if kind is not None and kind not in ENDPOINT_KINDS:
            raise InvalidParamsError(
                f"endpoint kind must be one of {sorted(ENDPOINT_KINDS)}, got {kind!r}"
            )
        self.base_url = normalize_base_url(base_url)
        self.model = model.strip()
        self._api_key = api_key or None
        self._kind_chosen = kind is not None
        self._kind = kind or guess_kind(self.base_url)
        self._context_window = 0
        # Connect fast (a refused port must show at once); reads may wait for a long prefill.
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)), trust_env=False
        )
        self._closed = False

    def __repr__(self) -> str:  # never show the key
        return f"RemoteEngine(base_url={safe_url(self.base_url)!r}, model={self.model!r})"

    @property
    def kind(self) -> str:
        return self._kind

    @property
    def info(self) -> ModelInfo:
        return ModelInfo(
            name=self.model,
            source=safe_url(self.base_url),
            backend="remote",
            device="remote",
            dtype="remote",
            context_window=self._context_window,
            supported_params=ENDPOINT_KINDS[self._kind],
            vision_refusal="",  # pictures go as they are; the endpoint's model decides
        )

    def list_models(self) -> list[RemoteModel]:
        return list_models(self.base_url, self._api_key)

    def probe(self) -> ModelInfo:
        """Ask ``/models`` for the kind (unless the user chose one) and the context window.

        Raises what the endpoint answers (refused, 401, ...) so a bad endpoint fails when it
        is chosen, not at the first message; a server without ``/models`` is accepted as is.
        """
        try:
            models = self.list_models()
        except RemoteError as exc:
            if exc.status == 404:
                return self.info
            raise
        match = next((m for m in models if m.id == self.model), None)
        if match is None:
            names = ", ".join(m.id for m in models[:10]) or "none"
            raise RemoteError(
                f"model {self.model!r} is not served by {safe_url(self.base_url)} "
                f"(it serves: {names})",
                status=404,
            )
        if not self._kind_chosen:
            self._kind = guess_kind(self.base_url, match.owned_by)
        self._context_window = match.context_window
        return self.info

    def count_tokens(self, messages: tuple[Message, ...]) -> int:
        """An estimate (about 4 characters a token, plus a few per turn): the endpoint's
        tokenizer is not available here. Exact counts arrive in each reply's usage."""
        return sum(len(m.content) // 4 + 4 for m in messages)

    def close(self) -> None:
        self._closed = True
        self._client.close()

    def generate(
        self,
        request: GenerationRequest,
        cancel: threading.Event | None = None,
        live: LiveParams | None = None,
    ) -> Iterator[Event]:
        """Stream one reply. Errors before any text raise; after text, `Finished(ERROR)`."""
        if self._closed:
            raise EngineClosedError("the remote engine was closed")
        cancel = cancel or threading.Event()
        body = self.request_body(request)
        started = time.perf_counter()
        url = f"{self.base_url}/chat/completions"
        try:
            with self._client.stream(
                "POST", url, json=body, headers=_headers(self._api_key)
            ) as rsp:
                if rsp.status_code >= 400:
                    rsp.read()
                raise_for_status(rsp, self.base_url, self._api_key, model=self.model)
                with shutdown_on_cancel(rsp, cancel):
                    yield from StreamReader(rsp, cancel, started, self._api_key).events()
        except httpx.HTTPError as exc:
            raise transport_error(exc, self.base_url, self._api_key) from None

    def request_body(self, request: GenerationRequest) -> dict[str, Any]:
        """The JSON body for ``request``, with only the fields this kind of endpoint honours."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [with_images(wire_message(m), m) for m in request.messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            **sampling_fields(request, ENDPOINT_KINDS[self._kind]),
            **tool_fields(request),
            **response_format_fields(request),
            **thinking_fields(request, self._kind),
        }
        if request.continue_last:
            # vLLM/Hearth: continue the last assistant message instead of starting a new one.
            body.update(continue_final_message=True, add_generation_prompt=False)
        return body


# Servers that render the model's chat template themselves and take its keyword arguments as
# ``chat_template_kwargs`` (vLLM, SGLang, llama.cpp's server; Hearth's own server too). An
# unknown server gets them as well: OpenAI-compatible servers ignore fields they do not know.
_TEMPLATE_KWARGS_KINDS = frozenset({"generic", "hearth", "vllm", "sglang", "llamacpp"})


def thinking_fields(request: GenerationRequest, kind: str) -> dict[str, Any]:
    """The thinking switch in the endpoint's dialect ({} when the request leaves it unset).

    vLLM, SGLang and llama.cpp pass ``chat_template_kwargs`` to the template (Qwen3's
    ``enable_thinking``); Ollama's ``/v1`` takes ``think``; OpenAI and TGI take neither.
    """
    if request.thinking is None:
        return {}
    if kind in _TEMPLATE_KWARGS_KINDS:
        return {"chat_template_kwargs": {"enable_thinking": request.thinking}}
    if kind == "ollama":
        return {"think": request.thinking}
    return {}


def sampling_fields(request: GenerationRequest, supported: frozenset[str]) -> dict[str, Any]:
    """The wire fields of ``request.params`` that ``supported`` holds, under their OpenAI names
    and other servers' aliases (llama.cpp reads repeat_penalty); an unset seed and an empty
    stop list are left out, so the server's own defaults apply."""
    fields: dict[str, Any] = {}
    for param in PARAMS:
        value = getattr(request.params, param.name)
        if param.api is None or param.name not in supported or value in (None, ()):
            continue
        for name in (param.api, *param.wire_aliases):
            fields[name] = list(value) if param.kind == "strings" else value
    return fields


def _headers(api_key: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json, text/event-stream"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers
