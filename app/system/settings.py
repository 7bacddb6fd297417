"""Every persistent UI preference: the only module that knows QSettings keys and defaults.

Owns window geometry, splitter state, theme, recent models, the Hugging Face Hub endpoint (a
mirror for users where the Hub is blocked), presets, the last sampling parameters,
per-conversation composer drafts, the text size, the local engine's context length and
thread count, and the safety review's Preferences. Values are validated on read so a corrupt or
hand-edited settings file falls back to defaults instead of crashing. Does not own the
conversations themselves (see `app.store`).
"""

from __future__ import annotations

import json
import os
from typing import Any

from PySide6.QtCore import QByteArray, QSettings

from engine.errors import InvalidParamsError
from engine.types import SamplingParams

ORGANIZATION = "Hearth"
APPLICATION = "Hearth"
MAX_RECENT_MODELS = 8
THEMES = ("system", "light", "dark")
# The local API server's port: away from the usual peers (vLLM 8000, llama.cpp 8080, Ollama
# 11434, LM Studio 1234) so it can run beside them.
DEFAULT_SERVER_PORT = 8421
DEFAULT_HUB_ENDPOINT = "https://huggingface.co"
# Offered in the models dialog: the Hub is blocked in mainland China; this mirror is not.
HUB_MIRROR_ENDPOINT = "https://hf-mirror.com"

# Built-in presets: names are translated in the UI, keys stay English in the settings file.
BUILTIN_PRESETS: dict[str, SamplingParams] = {
    "Precise": SamplingParams(temperature=0.2, top_k=20, top_p=0.9, min_p=0.05),
    "Balanced": SamplingParams(),
    "Creative": SamplingParams(temperature=1.0, top_k=80, top_p=0.98, min_p=0.02),
}
DEFAULT_PRESET = "Balanced"
FONT_SIZES = range(6, 41)  # points (0 = the system's size)
CONTEXT_LENGTHS = range(256, 1_048_577)  # tokens (0 = the model's own window)
THREADS = range(1, 257)  # (0 = automatic)
IDLE_UNLOAD_MINUTES = range(1, 24 * 60 + 1)  # (0 = never)
SAVED_CACHES_GB = range(1, 1025)  # (0 = off)
DEFAULT_SAVED_CACHES_GB = 4  # a few GB: ~45 chats of 2,000 tokens on the bundled model


class Settings:
    """Typed access to QSettings. Pass a ``path`` (INI file) in tests to stay isolated."""

    def __init__(self, path: str | None = None) -> None:
        if path is None:
            self._q = QSettings(ORGANIZATION, APPLICATION)
        else:
            self._q = QSettings(path, QSettings.Format.IniFormat)

    def sync(self) -> None:
        self._q.sync()

    # -- window -----------------------------------------------------------------------------
    def geometry(self) -> QByteArray | None:
        return self._bytes("window/geometry")

    def set_geometry(self, value: QByteArray) -> None:
        self._q.setValue("window/geometry", value)

    def splitter_state(self) -> QByteArray | None:
        return self._bytes("window/splitter")

    def set_splitter_state(self, value: QByteArray) -> None:
        self._q.setValue("window/splitter", value)

    def theme(self) -> str:
        value = str(self._q.value("ui/theme", "system"))
        return value if value in THEMES else "system"

    def set_theme(self, value: str) -> None:
        if value not in THEMES:
            raise ValueError(f"theme must be one of {THEMES}, got {value!r}")
        self._q.setValue("ui/theme", value)

    def last_conversation(self) -> str | None:
        value = self._q.value("ui/last_conversation", "")
        return str(value) or None

    def set_last_conversation(self, conversation_id: str | None) -> None:
        self._q.setValue("ui/last_conversation", conversation_id or "")

    # -- hints ------------------------------------------------------------------------------
    def hint_dismissed(self, name: str) -> bool:
        """Whether the user dismissed the hint ``name`` for good."""
        return _as_bool(self._q.value(f"hints/{_folder_kind(name)}", False))

    def dismiss_hint(self, name: str) -> None:
        self._q.setValue(f"hints/{_folder_kind(name)}", True)

    # -- file pickers -----------------------------------------------------------------------
    def last_folder(self, kind: str) -> str:
        """The folder a picker of ``kind`` ("models", "attachments", ...) last chose in."""
        return str(self._q.value(f"folders/{_folder_kind(kind)}", "") or "")

    def set_last_folder(self, kind: str, folder: str) -> None:
        self._q.setValue(f"folders/{_folder_kind(kind)}", folder)

    # -- models -----------------------------------------------------------------------------
    def recent_models(self) -> list[str]:
        value = self._json("models/recent", [])
        return [str(v) for v in value if isinstance(v, str)][:MAX_RECENT_MODELS]

    def add_recent_model(self, spec: str) -> None:
        recent = [spec] + [m for m in self.recent_models() if m != spec]
        self._q.setValue("models/recent", json.dumps(recent[:MAX_RECENT_MODELS]))

    def model_names(self) -> dict[str, str]:
        """The name each recent model declared when it was last loaded, by spec."""
        value = self._json("models/names", {})
        if not isinstance(value, dict):
            return {}
        return {str(k): str(v) for k, v in value.items() if isinstance(v, str) and v}

    def set_model_name(self, spec: str, name: str) -> None:
        """Remember ``spec``'s declared name, so the Recent list shows it after a restart
        (it showed the raw path); only recent models' names are kept."""
        recent = set(self.recent_models()) | {spec}
        names = {k: v for k, v in self.model_names().items() if k in recent}
        names[spec] = name
        self._q.setValue("models/names", json.dumps(names, ensure_ascii=False))

    def last_model(self) -> str:
        return str(self._q.value("models/last", "bundled")) or "bundled"

    def set_last_model(self, spec: str) -> None:
        self._q.setValue("models/last", spec)

    # -- Hugging Face Hub -------------------------------------------------------------------
    def hub_endpoint(self) -> str:
        """The Hub (or mirror) to use: the saved one, else ``HF_ENDPOINT``, else huggingface.co."""
        saved = self.saved_hub_endpoint()
        if saved:
            return saved
        env = os.environ.get("HF_ENDPOINT", "").strip()
        return env.rstrip("/") if env else DEFAULT_HUB_ENDPOINT

    def saved_hub_endpoint(self) -> str:
        """The address chosen in the app, or "" (then ``HF_ENDPOINT`` or the default applies)."""
        saved = str(self._q.value("hub/endpoint", "") or "").strip()
        return saved.rstrip("/") if saved.startswith(("http://", "https://")) else ""

    def set_hub_endpoint(self, url: str) -> None:
        """Save ``url`` ("" forgets it: back to ``HF_ENDPOINT`` or the default)."""
        url = url.strip()
        if url and not url.startswith(("http://", "https://")):
            raise ValueError(f"the Hub address must start with http:// or https://, got {url!r}")
        if url:
            self._q.setValue("hub/endpoint", url.rstrip("/"))
        else:
            self._q.remove("hub/endpoint")

    def token_host_answers(self) -> dict[str, bool]:
        """Mirror origins the user was asked about ("may the Hub token go there?"), with the
        answer: each is asked once (`app.hub.token_hosts`)."""
        raw = self._json("hub/token_hosts", {})
        if not isinstance(raw, dict):
            return {}
        return {str(k): v for k, v in raw.items() if isinstance(v, bool)}

    def set_token_host_answer(self, origin: str, allowed: bool) -> None:
        answers = {**self.token_host_answers(), origin: allowed}
        self._q.setValue("hub/token_hosts", json.dumps(answers))

    # -- one-time notices --------------------------------------------------------------------
    def notice_shown(self, key: str) -> bool:
        """Whether the one-time notice ``key`` (e.g. "input_method") was already shown."""
        return _as_bool(self._q.value(f"notices/{key}", False))

    def set_notice_shown(self, key: str) -> None:
        self._q.setValue(f"notices/{key}", True)

    # -- text size and the local engine ----------------------------------------------------
    def font_size(self) -> int:
        """The chat's text size in points; 0: the system's."""
        return self._int("view/font_size", 0, FONT_SIZES)

    def set_font_size(self, points: int) -> None:
        self._q.setValue("view/font_size", _check(points, FONT_SIZES, "font size"))

    def context_length(self) -> int:
        """The context window a local model is loaded with, in tokens; 0: the model's own."""
        return self._int("engine/context_length", 0, CONTEXT_LENGTHS)

    def set_context_length(self, tokens: int) -> None:
        self._q.setValue("engine/context_length", _check(tokens, CONTEXT_LENGTHS, "context"))

    def threads(self) -> int:
        """CPU threads for a local model; 0: automatic (one per physical core)."""
        return self._int("engine/threads", 0, THREADS)

    def set_threads(self, threads: int) -> None:
        self._q.setValue("engine/threads", _check(threads, THREADS, "thread count"))

    def idle_unload_minutes(self) -> int:
        """Minutes without use after which the local model is unloaded; 0: never (default)."""
        return self._int("engine/idle_unload_minutes", 0, IDLE_UNLOAD_MINUTES)

    def set_idle_unload_minutes(self, minutes: int) -> None:
        value = _check(minutes, IDLE_UNLOAD_MINUTES, "idle minutes")
        self._q.setValue("engine/idle_unload_minutes", value)

    def saved_caches_gb(self) -> int:
        """Disk budget for chats' saved KV caches (resume without a prefill); 0: off."""
        return self._int("engine/saved_caches_gb", DEFAULT_SAVED_CACHES_GB, SAVED_CACHES_GB)

    def set_saved_caches_gb(self, gb: int) -> None:
        self._q.setValue("engine/saved_caches_gb", _check(gb, SAVED_CACHES_GB, "cache size"))

    def _int(self, key: str, default: int, allowed: range) -> int:
        try:
            value = int(str(self._q.value(key, default)))
        except ValueError:
            return default
        return value if value == 0 or value in allowed else default

    # -- local API server -------------------------------------------------------------------
    def serve_local(self) -> bool:
        """Whether the user asked to serve the local engine over HTTP (off by default)."""
        return _as_bool(self._q.value("server/enabled", False))

    def set_serve_local(self, on: bool) -> None:
        self._q.setValue("server/enabled", bool(on))

    def server_port(self) -> int:
        try:
            port = int(str(self._q.value("server/port", DEFAULT_SERVER_PORT)))
        except ValueError:
            return DEFAULT_SERVER_PORT
        return port if 1 <= port <= 65535 else DEFAULT_SERVER_PORT

    def set_server_port(self, port: int) -> None:
        if not 1 <= port <= 65535:
            raise ValueError(f"server port must be in 1..65535, got {port}")
        self._q.setValue("server/port", port)

    # -- sampling ---------------------------------------------------------------------------
    def sampling_params(self) -> SamplingParams:
        data = self._json("sampling/params", None)
        if isinstance(data, dict):
            try:
                return SamplingParams.from_dict(data)
            except (InvalidParamsError, TypeError):
                pass  # hand-edited or from an incompatible version: defaults below
        return BUILTIN_PRESETS[DEFAULT_PRESET]

    def set_sampling_params(self, params: SamplingParams) -> None:
        self._q.setValue("sampling/params", json.dumps(params.to_dict()))

    def system_prompt(self) -> str:
        return str(self._q.value("sampling/system_prompt", ""))

    def set_system_prompt(self, text: str) -> None:
        self._q.setValue("sampling/system_prompt", text)

    def chinese_options(self) -> object:
        """New chats' Chinese reply options as stored (read with `ChineseOptions.from_dict`,
        which turns anything unreadable into "off")."""
        return self._json("sampling/chinese", {})

    def set_chinese_options(self, options: dict[str, object]) -> None:
        self._q.setValue("sampling/chinese", json.dumps(options))

    def safety(self) -> object:
        """The safety review's Preferences as stored (read with `SafetyConfig.from_dict`,
        which turns anything unreadable into "off")."""
        return self._json("safety/config", {})

    def set_safety(self, config: dict[str, object]) -> None:
        self._q.setValue("safety/config", json.dumps(config))

    def last_preset(self) -> str:
        return str(self._q.value("sampling/last_preset", DEFAULT_PRESET))

    def set_last_preset(self, name: str) -> None:
        self._q.setValue("sampling/last_preset", name)

    def user_presets(self) -> dict[str, SamplingParams]:
        data = self._json("sampling/user_presets", {})
        presets: dict[str, SamplingParams] = {}
        for name, value in data.items() if isinstance(data, dict) else []:
            try:
                presets[str(name)] = SamplingParams.from_dict(value)
            except (InvalidParamsError, TypeError, AttributeError):
                continue
        return presets

    def save_user_preset(self, name: str, params: SamplingParams) -> None:
        if not name.strip():
            raise ValueError("a preset needs a name")
        presets = {k: v.to_dict() for k, v in self.user_presets().items()}
        presets[name.strip()] = params.to_dict()
        self._q.setValue("sampling/user_presets", json.dumps(presets))

    # -- drafts -----------------------------------------------------------------------------
    def draft(self, conversation_id: str | None) -> str:
        return str(self._q.value(_draft_key(conversation_id), ""))

    def set_draft(self, conversation_id: str | None, text: str) -> None:
        key = _draft_key(conversation_id)
        if text:
            self._q.setValue(key, text)
        else:
            self._q.remove(key)

    # -- helpers ----------------------------------------------------------------------------
    def _bytes(self, key: str) -> QByteArray | None:
        value = self._q.value(key)
        return value if isinstance(value, QByteArray) and not value.isEmpty() else None

    def _json(self, key: str, default: Any) -> Any:
        raw = self._q.value(key)
        if not isinstance(raw, str) or not raw:
            return default
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return default


def _as_bool(value: object) -> bool:
    # INI files give back "true"/"false" strings; the native backends give bools.
    return value is True or str(value).strip().lower() in ("true", "1", "yes")


def _check(value: int, allowed: range, what: str) -> int:
    if value != 0 and value not in allowed:
        raise ValueError(f"{what} must be 0 or in {allowed.start}..{allowed.stop - 1}, got {value}")
    return value


def _draft_key(conversation_id: str | None) -> str:
    # Conversation ids are uuid-like; "new" holds the draft typed before a conversation exists.
    return f"drafts/{conversation_id or 'new'}"


def preset_label(name: str) -> str:
    """The shown (translated) name of a preset; user presets are shown as named."""
    from PySide6.QtCore import QCoreApplication

    labels = {  # literals, so lupdate sees them
        "Precise": QCoreApplication.translate("Presets", "Precise"),
        "Balanced": QCoreApplication.translate("Presets", "Balanced"),
        "Creative": QCoreApplication.translate("Presets", "Creative"),
    }
    return labels.get(name, name)


def _folder_kind(kind: str) -> str:
    if not kind.isidentifier():
        raise ValueError(f"folder kind must be a plain name, got {kind!r}")
    return kind
