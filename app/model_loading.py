"""Which model is loaded, and what follows from it: part of the composition root.

Owns loading a model spec ("bundled", a folder, a .gguf, "remote:<id>") in the background and
retrying a failed load, building the backend factory for a spec (local engine options from the
preferences, remote endpoints with their keys), remembering recent models and their picker
labels, the "serve the local engine" toggle (matched to the loaded model after each load), the
idle unload timer, and the Endpoints and Models windows (which start loads). Does not own
wiring the window's signals (`app.application` connects them here), the per-chat settings that
ask for a load, or the engine itself (`app.bridge`). Only `app.application` imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QTimer

from app.bridge import (
    BackendFactory,
    EngineBridge,
    list_remote_models,
    local_engine_factory,
    remote_engine_factory,
)
from app.chat.session import ChatSession, State
from app.hub import hub_calls
from app.system.endpoints import (
    REMOTE_PREFIX,
    EndpointError,
    EndpointList,
    endpoint_id_from_spec,
    model_spec,
)
from app.system.secrets import KeyringUnavailableError, KeyStore
from app.system.settings import Settings
from app.views.dialogs.endpoints import EndpointsDialog
from app.views.main_window import MainWindow
from app.views.models.dialog import ModelsDialog
from engine.types import ModelInfo


class ModelLoading(QObject):
    """Loads models for the window and session it is given; `Application` holds one (a child
    QObject, so its slots run on the GUI thread as the application's did)."""

    server_task: asyncio.Task[Any] | None = None  # the latest start/stop (tests await it)
    _pending_spec: str | None = None
    _pending_factory: BackendFactory | None = None  # as given to `load` (tests pass their own)
    _loaded_name: tuple[str, str] | None = None  # (spec, declared name) of the loaded model
    models_dialog: Any = None  # one Models window, kept: it holds the download in progress

    def __init__(
        self,
        parent: QObject,
        settings: Settings,
        bridge: EngineBridge,
        session: ChatSession,
        window: MainWindow,
    ) -> None:
        super().__init__(parent)
        self.settings = settings
        self.bridge = bridge
        self.session = session
        self.window = window
        self.keys = KeyStore()
        # Idle unload: armed each time the session turns idle (a reply ended, a model loaded)
        # while the preference is on; a send or a load in between re-arms it.
        self._idle_timer = QTimer(self)
        self._idle_timer.setSingleShot(True)
        self._idle_timer.timeout.connect(self.on_idle_timer_timeout)
        session.sig_state_changed.connect(self.on_session_state_changed_idle)

    # -- loading ----------------------------------------------------------------------------
    def load(self, spec: str, factory: BackendFactory | None = None) -> asyncio.Task[Any]:
        """Load ``spec`` ("bundled", a folder, a .gguf, "remote:<id>") in the background."""
        self._pending_spec, self._pending_factory = spec, factory
        return self.session.spawn(self._load(spec, factory))

    async def _load(self, spec: str, factory: BackendFactory | None) -> Any:
        # The bridge stops the API server before closing the old model; serve the new one.
        try:
            return await self.session.load_model(factory or self._factory_for(spec))
        finally:
            if self.settings.serve_local():
                await self.apply_server()
            else:
                self.window.set_server_url("")

    def on_window_model_requested(self, spec: str) -> None:
        self.load(spec)

    def on_window_load_retry_requested(self) -> None:
        """Opening the model failed with a message waiting: try the same model again."""
        if self._pending_spec is not None and not self.session.loading:
            self.load(self._pending_spec, self._pending_factory)

    def on_session_model_loaded(self, info: ModelInfo | None) -> None:
        spec = self._pending_spec
        self._loaded_name = (spec, info.name) if info is not None and spec else None
        if info is not None and spec:
            self.settings.add_recent_model(spec)
            self.settings.set_last_model(spec)
            self.settings.set_model_name(spec, info.name)
            self.session.set_model_spec(spec)
            if info.path.endswith(".gguf"):
                # However it was opened (the menu, Recent, the bundled one), the Models
                # window's "Last used" says so; only the window's own Use recorded it, and the
                # loaded model read "Loaded now" beside "Last used: Never".
                with contextlib.suppress(OSError):
                    hub_calls.touch_last_used(info.path)
        self.refresh_recent_models()  # the loaded one is shown by its declared name

    def _factory_for(self, spec: str) -> BackendFactory:
        endpoint_id = endpoint_id_from_spec(spec)
        if endpoint_id is None:
            return local_engine_factory(spec, **self.engine_options())
        endpoint = EndpointList().get(endpoint_id)
        if endpoint is None:
            raise EndpointError("this remote endpoint was removed; choose another model")
        keys = self.keys

        def key() -> str | None:
            try:
                return keys.get(endpoint_id)
            except KeyringUnavailableError:
                return None  # no keyring: a keyless endpoint still works; others answer 401

        return remote_engine_factory(endpoint.base_url, endpoint.model, key, endpoint.engine_kind)

    def engine_options(self) -> dict[str, int]:
        """What a local model is loaded with from the preferences (context length, threads,
        the disk budget for chats' saved caches); a preference at 0 is left to the engine."""
        s = self.settings
        chosen = {
            "context_window": s.context_length(),
            "threads": s.threads(),
            "saved_caches_bytes": s.saved_caches_gb() * 2**30,
        }
        return {name: value for name, value in chosen.items() if value}

    # -- local API server -------------------------------------------------------------------
    def on_window_serve_toggled(self, on: bool) -> None:
        self.settings.set_serve_local(on)
        self.server_task = self.session.spawn(self.apply_server())

    async def apply_server(self) -> str:
        """Make the server match the toggle and the loaded model; return the URL or ""."""
        url = ""
        try:
            if self.settings.serve_local() and self.bridge.can_serve:
                url = await self.bridge.start_server(self.settings.server_port())
            else:
                await self.bridge.stop_server()
                if self.settings.serve_local():
                    self.window.on_session_notice(
                        QCoreApplication.translate(
                            "Application",
                            "The local API server starts when a local model is loaded.",
                        )
                    )
        except Exception as exc:  # port taken, engine shut down: say so, untick the toggle
            self.settings.set_serve_local(False)
            self.window.set_serve_checked(False)
            self.session.sig_error.emit(exc)
        self.window.set_server_url(url)
        return url

    # -- idle unload ------------------------------------------------------------------------
    def on_session_state_changed_idle(self, state: str) -> None:
        minutes = self.settings.idle_unload_minutes()
        if state == State.IDLE and minutes:
            self._idle_timer.start(minutes * 60_000)
        else:
            self._idle_timer.stop()

    def on_idle_timer_timeout(self) -> None:
        minutes = self.settings.idle_unload_minutes()
        if minutes and self.session.state == State.IDLE:
            self.session.spawn(self._unload_if_idle(minutes))

    async def _unload_if_idle(self, minutes: int) -> None:
        if await self.bridge.unload_if_idle(minutes * 60):
            self.window.status.show_unloaded(minutes)

    # -- picker and model windows -----------------------------------------------------------
    def model_labels(self, specs: list[str]) -> dict[str, str]:
        """Picker text for each spec: endpoint labels for remote ones, the name a local model
        declared when it was last loaded (remembered across restarts), else a path's file
        name; never a whole path."""
        labels = self.settings.model_names()
        if self._loaded_name:
            labels[self._loaded_name[0]] = self._loaded_name[1]
        labels.update({model_spec(e): e.label for e in EndpointList()})
        return {s: labels.get(s) or _file_name(s) for s in specs}

    def refresh_recent_models(self) -> None:
        recent = self.settings.recent_models()
        self.window.set_recent_models(recent, self.model_labels(recent))

    def on_window_endpoints_requested(self) -> None:

        dialog = EndpointsDialog(EndpointList(), self.keys, list_remote_models, self.window)
        dialog.sig_use_requested.connect(lambda eid: self.load(REMOTE_PREFIX + eid))
        dialog.sig_endpoints_changed.connect(self.refresh_recent_models)
        dialog.open()

    def on_window_models_requested(self) -> None:

        if self.models_dialog is None:
            dialog = ModelsDialog(self.settings, self.keys, self.window, in_use=self._model_in_use)
            dialog.sig_use_requested.connect(self.load)  # a .gguf path, as "Open GGUF file…"
            self.window.sig_closing.connect(dialog.reject)  # quitting pauses a download
            self.models_dialog = dialog
        self.models_dialog.open()
        self.models_dialog.start()

    def on_hint_catalogue_requested(self, family: str) -> None:
        """A hint offered a catalogue model ("Get Qwen3.5…"): the Models window, on it."""
        self.on_window_models_requested()
        self.models_dialog.show_family(family)

    def _model_in_use(self) -> str:
        info = self.session.model_info
        return info.path if info is not None else ""


def _file_name(spec: str) -> str:
    """A path's last part ("qwen.gguf"); other specs ("bundled", a repo id) as they are."""
    if spec.startswith(("/", "~", "\\")) or re.match(r"[A-Za-z]:[\\/]", spec):
        return re.split(r"[\\/]", spec.rstrip("\\/"))[-1] or spec
    return spec
