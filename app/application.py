"""The composition root: builds the bridge, the database worker, the session and the window.

Owns start-up order (window first, then the store, then the model in the background so the
window appears before the model has loaded), wiring preferences from `app.system.settings` into the
widgets and back, presets, drafts, theme, export/import, and orderly shutdown. Loading models,
the "serve the local engine" toggle, idle unload and the Models/Endpoints windows live in
`app.model_loading` (composed here). Does not own behaviour: that lives in the session and
the views.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from app.bridge import BackendFactory, DbWorker, EngineBridge
from app.chat.chat_settings import ChatSettings
from app.chat.chinese_text import ChineseOptions
from app.chat.safety_config import SafetyConfig
from app.chat.session import ChatSession
from app.markdown.render import render_markdown
from app.model_loading import ModelLoading
from app.portability.export import export_conversations
from app.portability.importer import import_files
from app.store import Store, StoreError
from app.store.images import SWEEP_AFTER_S, sweep_image_files
from app.system import paths
from app.system.settings import BUILTIN_PRESETS, Settings, preset_label
from app.views.dialogs.store_problem import ask_about_store
from app.views.main_window import MainWindow
from app.views.theme import apply_theme, resolve_dark
from app.views.tools.feature import ToolsFeature
from app.views.window_extras import WindowExtras
from engine.types import SamplingParams

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
        self.window.folders.use(settings)  # file pickers open in the last folder used
        self.extras = WindowExtras.install(self.window, settings)
        self.tools = ToolsFeature.install(self.window, self.session)  # MCP servers, approval
        self._dark = resolve_dark(settings.theme())
        apply_theme(qapp, self._dark)
        self._draft_timer = QTimer(self)
        self._draft_timer.setSingleShot(True)
        self._draft_timer.setInterval(DRAFT_SAVE_MS)
        # Loads, the local API server, idle unload, the Models and Endpoints windows.
        self.models = ModelLoading(self, settings, self.bridge, self.session, self.window)
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
        self.session.safety_config = SafetyConfig.from_dict(s.safety())
        self._refresh_presets(s.last_preset())
        self.models.refresh_recent_models()
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
        w.sig_model_requested.connect(self.models.on_window_model_requested)
        w.sig_endpoints_requested.connect(self.models.on_window_endpoints_requested)
        w.sig_models_requested.connect(self.models.on_window_models_requested)
        w.sig_theme_toggled.connect(self.on_window_theme_toggled)
        w.sig_serve_toggled.connect(self.models.on_window_serve_toggled)
        w.sig_closing.connect(self.save_preferences)
        w.sig_export_requested.connect(self.on_window_export_requested)
        w.sig_import_requested.connect(self.on_window_import_requested)
        w.sig_load_retry_requested.connect(self.models.on_window_load_retry_requested)
        w.sig_tools_requested.connect(self.tools.on_window_tools_requested)
        self.extras.chinese_model_hint.sig_catalogue_requested.connect(
            self.models.on_hint_catalogue_requested
        )
        w.panel.sig_preset_chosen.connect(self.on_panel_preset_chosen)
        w.panel.sig_preset_save_requested.connect(self.on_panel_preset_save_requested)
        w.composer.sig_draft_changed.connect(lambda _t: self._draft_timer.start())
        self._draft_timer.timeout.connect(self._save_draft)
        s.sig_conversation_opened.connect(self.on_session_conversation_opened)
        s.sig_settings_restored.connect(self.on_session_settings_restored)
        s.sig_conversation_created.connect(self.on_session_conversation_created)
        s.sig_model_loaded.connect(self.models.on_session_model_loaded)
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

    # -- models (delegated to `ModelLoading`; tests and `on_session_settings_restored` call these)
    @property
    def server_task(self) -> asyncio.Task[Any] | None:
        """The latest local API server start/stop (tests await it)."""
        return self.models.server_task

    @property
    def _models_dialog(self) -> Any:
        return self.models.models_dialog

    def load(self, spec: str, factory: BackendFactory | None = None) -> asyncio.Task[Any]:
        """Load ``spec`` ("bundled", a folder, a .gguf, "remote:<id>") in the background."""
        return self.models.load(spec, factory)

    def engine_options(self) -> dict[str, int]:
        return self.models.engine_options()

    def model_labels(self, specs: list[str]) -> dict[str, str]:
        return self.models.model_labels(specs)

    # -- export and import ------------------------------------------------------------------
    def on_window_export_requested(self, fmt: str, everything: bool, folder: str) -> None:
        self.session.spawn(self.export(fmt, everything, Path(folder)))

    async def export(self, fmt: str, everything: bool, folder: Path) -> list[Path]:
        """Write chats as Markdown or JSON files (on the DB thread); say where they went."""

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

        imported = await self.db.call(import_files, files)
        await self.session.refresh_conversations()
        if imported:
            await self.session.open_conversation(imported[-1].id)
        self.window.on_session_notice(
            QCoreApplication.translate("Application", "Imported {0} chat(s).").format(len(imported))
        )

    async def start(self, *, db_path: Path | None = None, model: str | None = "") -> bool:
        """Open the store and the last conversation, then start loading the model.

        ``model`` None loads nothing (screenshots); "" loads the last used model. False: the
        database could not be opened and the user chose to quit.
        """
        warm = asyncio.get_running_loop().run_in_executor(None, _warm_up_rendering)
        if not await self.open_store(db_path):
            await warm
            return False
        if db_path is None or db_path == paths.database_path():
            # Picture files no message holds (a draft never sent, an erase that failed),
            # untouched for a day, go: on the DB thread, after anything queued before it.
            images = paths.data_dir() / "images"
            self.db.submit(sweep_image_files, images, older_than_s=SWEEP_AFTER_S)
        await warm
        await self.session.reporting(self.window.prompts.refresh())
        last = self.settings.last_conversation()
        rows = self.session.conversations.rows()
        if last not in {r.id for r in rows}:  # never saved (a crash) or deleted: the newest
            last = rows[0].id if rows else None
        await self.session.open_conversation(last)
        self.session.documents.library.rescan_all()  # files changed while Hearth was shut
        self.session.documents.library.watch()  # and from now on, as they change
        if model is not None:
            self.load(model or self.settings.last_model())
        return True

    async def open_store(self, db_path: Path | None = None) -> bool:
        """Open the conversation database; when it cannot be (damaged, from a newer Hearth, an
        unwritable folder), ask instead of crashing: move it aside, try again, or quit."""

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
        # Document indexing stops between two files; what was indexed stays.
        self.session.documents.library.stop_watching()
        await asyncio.get_running_loop().run_in_executor(
            None, self.session.documents.library.close_workers
        )
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

    for dark in (False, True):
        render_markdown(
            "# a $x^2$\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nx = 1\n```", dark=dark
        )
