"""The composition root: builds the bridge, the database worker, the session and the window.

Owns start-up order (window first, then the store, then the model in the background so the
window appears before the model has loaded), wiring preferences from `app.system.settings` into the
widgets and back, presets, drafts, theme, the "serve the local engine" toggle (stopped around
model switches, restarted after), and orderly shutdown. Does not own behaviour: that
lives in the session and the views.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from app.bridge import (
    BackendFactory,
    DbWorker,
    EngineBridge,
    list_remote_models,
    local_engine_factory,
    remote_engine_factory,
)
from app.chat.chat_settings import ChatSettings
from app.chat.chinese_text import ChineseOptions
from app.chat.session import ChatSession, State
from app.store import Store, StoreError
from app.system.endpoints import (
    REMOTE_PREFIX,
    EndpointError,
    EndpointList,
    endpoint_id_from_spec,
    model_spec,
)
from app.system.secrets import KeyringUnavailableError, KeyStore
from app.system.settings import BUILTIN_PRESETS, Settings, preset_label
from app.views.main_window import MainWindow
from app.views.theme import apply_theme, resolve_dark
from app.views.tools.feature import ToolsFeature
from app.views.window_extras import WindowExtras
from engine.types import ModelInfo, SamplingParams

DRAFT_SAVE_MS = 400
TEMPORARY_DRAFT = "<temporary>"  # the draft owner while a temporary chat is open: never saved


class Application(QObject):
    def __init__(self, qapp: QApplication, settings: Settings) -> None:
        super().__init__(qapp)
        self.qapp = qapp
        self.settings = settings
        self.bridge = EngineBridge()
        self.db = DbWorker()
        self.session = ChatSession(self.bridge, self.db, self)
        self.window = MainWindow(self.session)
        self.extras = WindowExtras.install(self.window, settings)
        self.tools = ToolsFeature.install(self.window, self.session)  # MCP servers, approval
        self._keys = KeyStore()
        self._dark = resolve_dark(settings.theme())
        apply_theme(qapp, self._dark)
        self._draft_timer = QTimer(self)
        self._draft_timer.setSingleShot(True)
        self._draft_timer.setInterval(DRAFT_SAVE_MS)
        # Idle unload: armed each time the session turns idle (a reply ended, a model loaded)
        # while the preference is on; a send or a load in between re-arms it.
        self._idle_timer = QTimer(self)
        self._idle_timer.setSingleShot(True)
        self._idle_timer.timeout.connect(self.on_idle_timer_timeout)
        self.session.sig_state_changed.connect(self.on_session_state_changed_idle)
        self._restore_preferences()
        self._connect()

    # -- preferences ------------------------------------------------------------------------
    def _restore_preferences(self) -> None:
        s, w = self.settings, self.window
        if (geometry := s.geometry()) is not None:
            w.restoreGeometry(geometry)
        if (splitter := s.splitter_state()) is not None:
            w.splitter.restoreState(splitter)
        self.apply_params(s.sampling_params())
        w.panel.set_system_prompt(s.system_prompt())
        self.session.set_system_prompt(s.system_prompt())
        self.session.set_chinese(ChineseOptions.from_dict(s.chinese_options()))
        self._refresh_presets(s.last_preset())
        self._refresh_recent_models()
        w.set_server_port(s.server_port())
        w.set_serve_checked(s.serve_local())

    def _refresh_presets(self, current: str) -> None:
        user = self.settings.user_presets()
        presets = [(k, preset_label(k), p) for k, p in BUILTIN_PRESETS.items()]
        presets += [(k, k, p) for k, p in user.items()]
        self.window.panel.set_presets(presets, current)

    def save_preferences(self) -> None:
        s, w = self.settings, self.window
        s.set_geometry(w.saveGeometry())
        s.set_splitter_state(w.splitter.saveState())
        # What new chats start from; each saved chat keeps its own settings in the store.
        s.set_sampling_params(self.session.defaults.params)
        s.set_system_prompt(self.session.defaults.system_prompt)
        s.set_chinese_options(self.session.defaults.chinese.to_dict())
        s.set_last_conversation(None if self.session.temporary else self.session.conversation_id)
        self._save_draft()
        s.sync()

    def _connect(self) -> None:
        w, s = self.window, self.session
        w.sig_model_requested.connect(self.on_window_model_requested)
        w.sig_endpoints_requested.connect(self.on_window_endpoints_requested)
        w.sig_models_requested.connect(self.on_window_models_requested)
        w.sig_theme_toggled.connect(self.on_window_theme_toggled)
        w.sig_serve_toggled.connect(self.on_window_serve_toggled)
        w.sig_closing.connect(self.save_preferences)
        w.sig_export_requested.connect(self.on_window_export_requested)
        w.sig_import_requested.connect(self.on_window_import_requested)
        w.sig_load_retry_requested.connect(self.on_window_load_retry_requested)
        w.sig_tools_requested.connect(self.tools.on_window_tools_requested)
        w.panel.sig_preset_chosen.connect(self.on_panel_preset_chosen)
        w.panel.sig_preset_save_requested.connect(self.on_panel_preset_save_requested)
        w.composer.sig_draft_changed.connect(lambda _t: self._draft_timer.start())
        self._draft_timer.timeout.connect(self._save_draft)
        s.sig_conversation_opened.connect(self.on_session_conversation_opened)
        s.sig_settings_restored.connect(self.on_session_settings_restored)
        s.sig_conversation_created.connect(self.on_session_conversation_created)
        s.sig_model_loaded.connect(self.on_session_model_loaded)
        s.sig_temporary_changed.connect(self.on_session_temporary_changed)
        hints = QGuiApplication.styleHints()
        if hints is not None:
            hints.colorSchemeChanged.connect(self.on_system_color_scheme_changed)
        self._draft_owner: str | None = None

    # -- slots ------------------------------------------------------------------------------
    def on_panel_preset_chosen(self, name: str) -> None:
        params = {**BUILTIN_PRESETS, **self.settings.user_presets()}.get(name)
        if params is None:
            return
        # Keep the user's limits and stop strings; a preset is about how to sample.
        current = self.session.params
        params = params.replace(
            max_new_tokens=current.max_new_tokens, stop=current.stop, seed=current.seed
        )
        self.apply_params(params)
        self.settings.set_last_preset(name)

    def on_panel_preset_save_requested(self, name: str) -> None:
        self.settings.save_user_preset(name, self.session.params)
        self.settings.set_last_preset(name)
        self._refresh_presets(name)

    def on_window_theme_toggled(self) -> None:
        self._dark = not self._dark
        self.settings.set_theme("dark" if self._dark else "light")
        apply_theme(self.qapp, self._dark)  # the chat view re-renders on PaletteChange

    def on_system_color_scheme_changed(self, _scheme: object) -> None:
        # "system" follows the desktop's light/dark switch while the app runs.
        if self.settings.theme() == "system":
            self._dark = resolve_dark("system")
            apply_theme(self.qapp, self._dark)

    def on_session_settings_restored(self, settings: ChatSettings) -> None:
        """A chat opened with its own settings: sample with them, and load its model when it
        was another one this machine knows (never while one is loading or writing; a new chat
        keeps the model that is loaded)."""
        self.apply_params(settings.params)
        spec = settings.model if self.session.conversation_id else None
        known = spec == "bundled" or spec in self.settings.recent_models()
        loaded = self.session.model_info is not None
        if spec and known and loaded and spec != self.session.model_spec and not self.session.busy:
            self.load(spec)

    def on_session_conversation_opened(self, conversation_id: str) -> None:
        # Remembered at once, so a crash still reopens this chat next time.
        self.settings.set_last_conversation(conversation_id or None)
        # Drafts are per conversation ("" is the new, unsaved chat): save, then swap.
        owner = conversation_id or None
        if owner != self._draft_owner:
            self._save_draft()
            self._draft_owner = owner
            self.window.composer.set_text(self.settings.draft(owner))

    def on_session_conversation_created(self, conversation_id: str) -> None:
        # The text in the composer is being sent as this chat's first message: it now
        # belongs to the new conversation (and is cleared once the send is accepted).
        if self.session.temporary:
            return  # nothing of a temporary chat is written, its id included
        self.settings.set_draft(None, "")
        self._draft_owner = conversation_id

    def on_session_temporary_changed(self, on: bool) -> None:
        # From now until another chat opens, what is typed belongs to no saved draft.
        if on:
            self._draft_owner = TEMPORARY_DRAFT

    def _save_draft(self) -> None:
        if self._draft_owner == TEMPORARY_DRAFT:
            return
        self.settings.set_draft(self._draft_owner, self.window.composer.text())

    def on_session_model_loaded(self, info: ModelInfo | None) -> None:
        spec = self._pending_spec
        self._loaded_name = (spec, info.name) if info is not None and spec else None
        if info is not None and spec:
            self.settings.add_recent_model(spec)
            self.settings.set_last_model(spec)
            self.session.set_model_spec(spec)
        self._refresh_recent_models()  # the loaded one is shown by its declared name

    # -- local API server -------------------------------------------------------------------
    server_task: asyncio.Task[Any] | None = None  # the latest start/stop (tests await it)

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
                    self.window.on_session_notice(self._waiting_for_local_model())
        except Exception as exc:  # port taken, engine shut down: say so, untick the toggle
            self.settings.set_serve_local(False)
            self.window.set_serve_checked(False)
            self.session.sig_error.emit(exc)
        self.window.set_server_url(url)
        return url

    def _waiting_for_local_model(self) -> str:
        return QCoreApplication.translate(
            "Application", "The local API server starts when a local model is loaded."
        )

    def on_window_export_requested(self, fmt: str, everything: bool, folder: str) -> None:
        self.session.spawn(self.export(fmt, everything, Path(folder)))

    async def export(self, fmt: str, everything: bool, folder: Path) -> list[Path]:
        """Write chats as Markdown or JSON files (on the DB thread); say where they went."""
        from app.portability.export import export_conversations

        if everything:  # from the store: the sidebar may be showing search hits only
            ids = [c.id for c in await self.db.call(Store.list_conversations)]
        else:
            ids = [self.session.conversation_id] if self.session.conversation_id else []
        # A temporary chat is exported from its memory store, on the user's explicit request.
        db = self.db if everything else self.session.db
        written = await db.call(export_conversations, ids, fmt, folder)
        self.window.on_session_notice(
            QCoreApplication.translate("Application", "Exported {0} chat(s) to {1}").format(
                len(written), folder
            )
        )
        return written

    def on_window_import_requested(self, files: list[str]) -> None:
        self.session.spawn(self.import_files([Path(f) for f in files]))

    async def import_files(self, files: list[Path]) -> None:
        from app.portability.importer import import_files

        imported = await self.db.call(import_files, files)
        await self.session.refresh_conversations()
        if imported:
            await self.session.open_conversation(imported[-1].id)
        self.window.on_session_notice(
            QCoreApplication.translate("Application", "Imported {0} chat(s).").format(len(imported))
        )

    def on_window_model_requested(self, spec: str) -> None:
        self.load(spec)

    def on_window_load_retry_requested(self) -> None:
        """Opening the model failed with a message waiting: try the same model again."""
        if self._pending_spec is not None and not self.session.loading:
            self.load(self._pending_spec, self._pending_factory)

    # -- lifecycle --------------------------------------------------------------------------
    _pending_spec: str | None = None
    _pending_factory: BackendFactory | None = None  # as given to `load` (tests pass their own)
    _loaded_name: tuple[str, str] | None = None  # (spec, declared name) of the loaded model

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

    def _factory_for(self, spec: str) -> BackendFactory:
        endpoint_id = endpoint_id_from_spec(spec)
        if endpoint_id is None:
            return local_engine_factory(spec, **self.engine_options())
        endpoint = EndpointList().get(endpoint_id)
        if endpoint is None:
            raise EndpointError("this remote endpoint was removed; choose another model")
        keys = self._keys

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
            self.window.statusBar().showMessage(
                self.tr("Model unloaded after {0} minutes unused; the next message reloads it.")
                .format(minutes)
            )  # fmt: skip

    def model_labels(self, specs: list[str]) -> dict[str, str]:
        """Picker text for each spec: endpoint labels for remote ones, the declared name for
        the loaded local model, other paths as they are."""
        labels = dict([self._loaded_name]) if self._loaded_name else {}
        labels.update({model_spec(e): e.label for e in EndpointList()})
        return {s: labels.get(s, s) for s in specs}

    def on_window_endpoints_requested(self) -> None:
        from app.views.dialogs.endpoints import EndpointsDialog

        dialog = EndpointsDialog(EndpointList(), self._keys, list_remote_models, self.window)
        dialog.sig_use_requested.connect(lambda eid: self.load(REMOTE_PREFIX + eid))
        dialog.sig_endpoints_changed.connect(self._refresh_recent_models)
        dialog.open()

    _models_dialog: Any = None  # one Models window, kept: it holds the download in progress

    def on_window_models_requested(self) -> None:
        from app.views.models.dialog import ModelsDialog

        if self._models_dialog is None:
            dialog = ModelsDialog(self.settings, self._keys, self.window, in_use=self._model_in_use)
            dialog.sig_use_requested.connect(self.load)  # a .gguf path, as "Open GGUF file…"
            self.window.sig_closing.connect(dialog.reject)  # quitting pauses a download
            self._models_dialog = dialog
        self._models_dialog.open()
        self._models_dialog.start()

    def _model_in_use(self) -> str:
        info = self.session.model_info
        return info.path if info is not None else ""

    def _refresh_recent_models(self) -> None:
        recent = self.settings.recent_models()
        self.window.set_recent_models(recent, self.model_labels(recent))

    async def start(self, *, db_path: Path | None = None, model: str | None = "") -> bool:
        """Open the store and the last conversation, then start loading the model.

        ``model`` None loads nothing (screenshots); "" loads the last used model. False: the
        database could not be opened and the user chose to quit.
        """
        warm = asyncio.get_running_loop().run_in_executor(None, _warm_up_rendering)
        if not await self.open_store(db_path):
            await warm
            return False
        await warm
        await self.session.reporting(self.window.prompts.refresh())
        last = self.settings.last_conversation()
        rows = self.session.conversations.rows()
        if last not in {r.id for r in rows}:  # never saved (a crash) or deleted: the newest
            last = rows[0].id if rows else None
        await self.session.open_conversation(last)
        if model is not None:
            self.load(model or self.settings.last_model())
        return True

    async def open_store(self, db_path: Path | None = None) -> bool:
        """Open the conversation database; when it cannot be (damaged, from a newer Hearth, an
        unwritable folder), ask instead of crashing: move it aside, try again, or quit."""
        from app.system import paths
        from app.views.dialogs.store_problem import ask_about_store

        path = db_path or paths.database_path()
        while True:
            try:
                await self.session.open_store(path=path)
                return True
            except StoreError as exc:
                # Opened but unreadable (damaged pages): let go of the file before it may be
                # moved (Windows cannot rename an open file); no store open -> nothing to do.
                with contextlib.suppress(Exception):
                    await self.db.call(Store.close)
                if not await ask_about_store(self.window, path, exc):
                    return False

    async def shutdown(self) -> bool:
        """Save everything and stop the workers; False if the engine thread is still busy."""
        self.save_preferences()
        engine_stopped = await self.session.close()
        await asyncio.get_running_loop().run_in_executor(None, self.tools.close)  # MCP servers
        await asyncio.get_running_loop().run_in_executor(None, self.db.close_blocking)
        return engine_stopped

    def apply_params(self, params: SamplingParams) -> None:
        """Show ``params`` in the panel and sample with them; a slider edit takes the other
        path, the panel's ``sig_params_changed`` to `ChatSession.set_params`."""
        self.window.panel.set_params(params)
        self.session.set_params(params)


def _warm_up_rendering() -> None:
    """Import and exercise the Markdown and highlighting code off the GUI thread: the first
    highlighted block otherwise costs ~200 ms (pygments loads lexers) in the middle of a paint,
    and the first formula ~300 ms (ziamath loads its font)."""
    from app.markdown.render import render_markdown

    for dark in (False, True):
        render_markdown(
            "# a $x^2$\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nx = 1\n```", dark=dark
        )
