"""The main window: sidebar | chat (transcript + composer) | sampling panel, toolbar, status bar.

Owns layout, the model menu (`app.views.chat.model_menu`), the status bar (model,
device, state, context used/total/cached, load progress, local server URL, Undo after delete;
the slower-path notice lives in `app.views.chat.slow_path`), fitting a small window (below
`NARROW_WIDTH` the settings panel folds behind its toolbar toggle and the sidebar narrows),
and showing a chat's own system prompt and Think switch when it opens. Clicks on messages are
`app.views.chat.message_actions`'. Does not own state (the `ChatSession`) or
persistence of preferences (the application saves them through `app.system.settings`).
"""

from __future__ import annotations

from collections.abc import Coroutine
from functools import partial
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QKeySequence,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QBoxLayout,
    QMainWindow,
    QPushButton,
    QScrollArea,
    QSplitter,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from app.chat.chat_settings import ChatSettings
from app.chat.images import ImageAttachment
from app.chat.send_queue import QueuedSend
from app.chat.session import ChatSession, State
from app.views.chat.chat_view import ChatView
from app.views.chat.composer import Composer
from app.views.chat.message_actions import MessageActions
from app.views.chat.model_menu import ModelMenu
from app.views.chat.queued_send import QueuedSendBar
from app.views.chat.sampling_panel import SamplingPanel
from app.views.chat.sidebar import Sidebar
from app.views.chat.slow_path import SlowPathNotice
from app.views.chat.status_bar import StatusBar
from app.views.chat.why_slow import WhySlowNotice
from app.views.dialogs.common import show_error
from app.views.dialogs.file_dialogs import FolderMemory
from app.views.dialogs.prompt_library import PromptLibrary, PromptLibraryBar, connect_library
from app.views.documents.window_documents import install_documents
from app.views.shortcuts import MODELS_KEY, PANEL_KEY, THEME_KEY
from engine.types import ImageRef, LoadProgress, Message, ModelInfo

UNDO_MS = 10_000
NARROW_WIDTH = 1100  # px: below this the settings panel folds away (800x600 keeps ~560 for chat)
SIDEBAR_WIDTH, NARROW_SIDEBAR_WIDTH = 250, 190


class MainWindow(QMainWindow):
    sig_model_requested = Signal(str)  # "bundled", a folder or a .gguf path
    sig_theme_toggled = Signal()
    sig_endpoints_requested = Signal()
    sig_models_requested = Signal()  # open the Models window (catalogue, downloads, local)
    sig_tools_requested = Signal()  # open the Tools (MCP) window
    sig_serve_toggled = Signal(bool)  # the user ticked/unticked "Serve the local engine"
    sig_closing = Signal()
    sig_export_requested = Signal(str, bool, str)  # format, all chats?, folder
    sig_import_requested = Signal(list)  # file paths
    sig_load_retry_requested = Signal()  # open the model that failed to open again

    def __init__(self, session: ChatSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("mainWindow")
        self.setWindowTitle(self.tr("Hearth"))
        self.resize(1280, 820)
        self.session = session
        self.folders = FolderMemory()  # where file pickers open (the application adds settings)
        self.sidebar = Sidebar(session.conversations, self)
        self.chat = ChatView(session.messages, self)
        self.composer = Composer(self)
        self.composer.folders = self.folders
        self.queued_bar = QueuedSendBar(self)  # a message waiting for the model to open
        self.panel = SamplingPanel(self)
        self.prompt_bar = PromptLibraryBar(self.panel)
        self.prompts = PromptLibrary(session.db, self)
        # Not `self.actions`: that would hide QWidget.actions().
        self.message_actions = MessageActions(self, session)
        self.slow_path = SlowPathNotice(self)
        self.why_slow = WhySlowNotice(self)  # the status bar's "Why is this slow?" link
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self._build_central()
        self._build_toolbar()
        self._build_menu()
        self._build_status_bar()
        self._connect_session()
        self._connect_widgets()
        self._deleted: list[str] = []
        self._narrow: bool | None = None  # unknown until the first resize

    # -- construction -----------------------------------------------------------------------
    def _build_central(self) -> None:
        column = QWidget(self)
        column.setObjectName("chatColumn")
        layout = QVBoxLayout(column)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.chat, 1)
        layout.addWidget(self.queued_bar)
        layout.addWidget(self.composer)
        scroll = QScrollArea(self)
        scroll.setObjectName("panelScroll")
        scroll.setWidget(self.panel)
        scroll.setWidgetResizable(True)
        # Wide enough for the panel's own minimum (sliders, spin boxes, the prompt buttons) plus
        # the vertical scroll bar: narrower, with no horizontal scrolling, the right edge is cut.
        bar = scroll.verticalScrollBar().sizeHint().width()
        panel_width = max(290, self.panel.minimumSizeHint().width() + bar + 4)
        scroll.setMinimumWidth(panel_width)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.splitter.addWidget(self.sidebar)
        self.splitter.addWidget(column)
        self.splitter.addWidget(scroll)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([250, 1030 - panel_width, panel_width])
        self.splitter.setChildrenCollapsible(False)
        self.panel_scroll = scroll
        self.setCentralWidget(self.splitter)
        # The prompt library sits right above the system-prompt box; Tab leaves the box.
        prompt_box = self.panel.system_prompt
        prompt_box.setTabChangesFocus(True)
        panel_layout = self.panel.layout()
        assert isinstance(panel_layout, QBoxLayout)  # the panel stacks its rows
        panel_layout.insertWidget(panel_layout.indexOf(prompt_box), self.prompt_bar)

    def _build_toolbar(self) -> None:
        bar = QToolBar(self.tr("Main"), self)
        bar.setObjectName("mainToolbar")
        bar.setMovable(False)
        self.models = ModelMenu(
            self, self.slow_path, self.folders
        )  # the model button, menu, serve toggle
        self.model_button, self.model_menu = self.models.button, self.models.menu
        self.server_action = self.models.server_action
        self.models.sig_model_requested.connect(self.sig_model_requested)
        self.models.sig_models_requested.connect(self.sig_models_requested)
        self.models.sig_endpoints_requested.connect(self.sig_endpoints_requested)
        bar.addWidget(self.model_button)
        self.models_action = QAction(self.tr("Models…"), self)
        self.models_action.setObjectName("modelsAction")
        self.models_action.setShortcut(QKeySequence(MODELS_KEY))
        self.models_action.triggered.connect(self.sig_models_requested)
        bar.addAction(self.models_action)
        spacer = QWidget(self)
        spacer.setSizePolicy(
            spacer.sizePolicy().horizontalPolicy().Expanding, spacer.sizePolicy().verticalPolicy()
        )
        bar.addWidget(spacer)
        self.panel_action = QAction(self.tr("Sampling"), self)
        self.panel_action.setCheckable(True)
        self.panel_action.setChecked(True)
        self.panel_action.setShortcut(QKeySequence(PANEL_KEY))
        self.theme_action = QAction(self.tr("Dark / light"), self)
        self.theme_action.setShortcut(QKeySequence(THEME_KEY))
        bar.addAction(self.panel_action)
        bar.addAction(self.theme_action)
        self.addToolBar(bar)

    def _build_menu(self) -> None:
        menu = self.menuBar().addMenu(self.tr("&File"))
        menu.addAction(
            self.tr("New chat"), QKeySequence.StandardKey.New, self.session.on_new_requested
        )
        menu.addAction(self.tr("Import chats…"), self._on_import)
        menu.addSeparator()
        for label, fmt, everything in (
            (self.tr("Export this chat as Markdown…"), "markdown", False),
            (self.tr("Export this chat as JSON…"), "json", False),
            (self.tr("Export all chats as Markdown…"), "markdown", True),
            (self.tr("Export all chats as JSON…"), "json", True),
        ):
            menu.addAction(label, partial(self._on_export, fmt, everything))
        menu.addSeparator()
        menu.addAction(self.tr("Quit"), QKeySequence.StandardKey.Quit, self.close)
        # Edit sits between File and View, where Preferences is looked for (`Shortcuts` fills
        # it: the actions on the last reply, then Preferences).
        self.edit_menu = self.menuBar().addMenu(self.tr("&Edit"))
        view = self.menuBar().addMenu(self.tr("&View"))
        view.addAction(self.panel_action)
        view.addAction(self.theme_action)
        search = view.addAction(
            self.tr("Search chats"), QKeySequence.StandardKey.Find, self.sidebar.search.setFocus
        )
        search.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        tools = self.menuBar().addMenu(self.tr("&Tools"))
        tools.addAction(self.tr("MCP servers and tools…"), self.sig_tools_requested.emit)

    def _on_export(self, fmt: str, everything: bool) -> None:
        if not everything and not self.session.conversation_id:
            self.on_session_notice(self.tr("Open a chat to export it."))
            return
        folder = self.folders.open_folder(self, "export", self.tr("Export into folder"))
        if folder:
            self.sig_export_requested.emit(fmt, everything, folder)

    def _on_import(self) -> None:
        files = self.folders.open_files(
            self, "import", self.tr("Import chats"), self.tr("Chats (*.json *.md);;All files (*)")
        )
        if files:
            self.sig_import_requested.emit(files)

    def _build_status_bar(self) -> None:
        self.status = StatusBar(self)
        # The labels as the window's own names: the views and tests reach them here.
        self.state_label, self.model_label = self.status.state_label, self.status.model_label
        self.context_label, self.server_label = self.status.context_label, self.status.server_label
        self.progress, self.load_time_label = self.status.progress, self.status.load_time_label
        self.load_view = self.status.load_view
        self.undo_button = QPushButton(self.tr("Undo delete"), self)
        self.undo_button.setVisible(False)
        self._undo_timer = QTimer(self)
        self._undo_timer.setSingleShot(True)
        self._undo_timer.setInterval(UNDO_MS)
        self._undo_timer.timeout.connect(self._on_undo_timer_timeout)
        self.status.add_widgets(self.undo_button, self.slow_path.button)
        self.status.add_why_slow(self.why_slow.button)
        self.on_session_state_changed(self.session.state.value)
        self.on_session_context_changed(0, 0, 0)

    def _connect_session(self) -> None:
        s = self.session
        s.sig_state_changed.connect(self.on_session_state_changed)
        s.sig_model_loaded.connect(self.on_session_model_loaded)
        s.sig_load_progress.connect(self.on_session_load_progress)
        s.sig_error.connect(self.on_session_error)
        s.sig_notice.connect(self.on_session_notice)
        s.sig_context_changed.connect(self.on_session_context_changed)
        s.sig_conversation_opened.connect(self.sidebar.select)
        s.sig_context_restored.connect(self.on_session_context_restored)
        s.sig_conversation_created.connect(self.sidebar.select)
        s.sig_send_accepted.connect(self.composer.clear_after_send)
        s.sig_settings_restored.connect(self.on_session_settings_restored)
        s.queue.sig_changed.connect(self.on_queue_changed)
        s.queue.sig_edit_returned.connect(self.message_actions.on_queue_edit_returned)

    def _connect_widgets(self) -> None:
        s = self.session
        self.composer.sig_send_requested.connect(self.on_composer_send_requested)
        self.composer.sig_images_changed.connect(
            lambda: self.status.show_draft_images(self.composer.images.tokens())
        )
        self.composer.images.counter = self._count_image
        self.composer.sig_stop_requested.connect(s.on_stop_requested)
        self.queued_bar.sig_cancel_requested.connect(s.queue.cancel)
        self.queued_bar.sig_retry_requested.connect(self.sig_load_retry_requested)
        self.sidebar.sig_new_requested.connect(s.on_new_requested)
        self.sidebar.sig_open_requested.connect(s.on_open_requested)
        self.sidebar.sig_search_requested.connect(s.on_search_requested)
        self.sidebar.sig_delete_requested.connect(self.on_sidebar_delete_requested)
        self.undo_button.clicked.connect(self.on_undo_clicked)
        s.sig_generation_finished.connect(
            lambda item: self.why_slow.look(s.model_info, item.record.stats or {})
        )
        self.panel.sig_params_changed.connect(s.set_params)
        self.panel.sig_system_prompt_changed.connect(s.set_system_prompt)
        self.panel.sig_system_prompt_changed.connect(self.prompt_bar.show_text)
        self.prompt_bar.sig_prompt_chosen.connect(self.on_prompt_bar_prompt_chosen)
        connect_library(self.prompt_bar, self.prompts, self._run, self.panel.system_prompt_text)
        self.composer.sig_thinking_toggled.connect(s.set_thinking)
        self.panel.sig_error.connect(self.on_session_notice)
        self.panel_action.toggled.connect(self.panel_scroll.setVisible)
        self.theme_action.triggered.connect(self.sig_theme_toggled)
        self.server_action.toggled.connect(self.sig_serve_toggled)
        self.chat.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.chat.customContextMenuRequested.connect(self.message_actions.on_chat_context_menu)
        delegate = self.chat.message_delegate
        delegate.sig_action.connect(self.message_actions.on_message_action)
        delegate.sig_link_clicked.connect(self.message_actions.on_link_clicked)
        self.document_drops = install_documents(self)  # attachments: chips, paperclip, drops

    # -- model menu and local API server (`ModelMenu`) ----------------------------------------
    def set_recent_models(self, recent: list[str], labels: dict[str, str] | None = None) -> None:
        self.models.set_recent_models(recent, labels)

    def set_server_port(self, port: int) -> None:
        self.models.set_server_port(port)

    def set_serve_checked(self, on: bool) -> None:
        self.models.set_serve_checked(on)

    def set_server_url(self, url: str) -> None:
        """Show where the local API server listens; "" while it is not serving."""
        self.server_label.setText(self.tr("API: {0}").format(url) if url else "")
        self.server_label.setVisible(bool(url))

    # -- session slots ----------------------------------------------------------------------
    def on_session_state_changed(self, state: str) -> None:
        self.status.show_state(State(state), self.session.model_info is not None)
        self.composer.set_generating(state in (State.GENERATING, State.STOPPING))
        loading = state == State.LOADING
        # While a model opens, a message can be sent: it waits for the model (`SendQueue`).
        self.composer.set_can_send(self.session.model_info is not None or loading)
        if loading:
            self.slow_path.set_model(None)

    def on_session_model_loaded(self, info: ModelInfo | None) -> None:
        self.models.show_model(info)
        self.status.show_model(info)
        self.slow_path.set_model(info)
        self.composer.set_can_send(info is not None)
        self.composer.set_thinking_available(info is not None and info.thinking_toggle)
        self.composer.set_model(info)  # its image budgets, or why it cannot see (greyed)
        self.panel.set_supported(info.supported_params if info is not None else None)

    def on_composer_send_requested(self, text: str) -> None:
        """The text, and the draft's pictures with their budgets, go to the session."""
        images = self.composer.image_attachments()
        # A turn without pictures goes as it always has (`ChatSession.send(text)`).
        self._run(self.session.send(text, images=images) if images else self.session.send(text))

    async def _count_image(self, image: ImageAttachment) -> int:
        """The tokens ``image`` takes at its budget, as the engine counts it by its size."""
        count, ref = (
            self.session.bridge.count_tokens,
            ImageRef(image.path, image.sha256, image.budget),
        )
        alone = await count((Message("user", "", images=(ref,)),))
        return alone - await count((Message("user", ""),))

    def on_session_load_progress(self, progress: LoadProgress) -> None:
        # A late report after the load ended is ignored (the idle reload's have no LOADING).
        self.status.show_load_progress(progress, loading=self.session.state == State.LOADING)

    def on_queue_changed(self, queued: QueuedSend | None) -> None:
        self.queued_bar.show_queued(queued)
        # The waiting text stays in the box, read-only until it is sent or cancelled.
        waiting = queued is not None and queued.edit_of is None
        self.composer.set_queued(waiting, failed=waiting and queued is not None and queued.failed)

    def on_session_error(self, exc: BaseException) -> None:
        show_error(self, exc)

    def on_session_notice(self, text: str) -> None:
        self.statusBar().showMessage(text, 6000)

    def on_session_settings_restored(self, settings: ChatSettings) -> None:
        """A chat opened: show its own system prompt and Think switch (the application applies
        its sampling settings and model)."""
        self.panel.set_system_prompt(settings.system_prompt)
        self.prompt_bar.show_text(settings.system_prompt)
        self.composer.set_thinking(settings.thinking)

    def on_prompt_bar_prompt_chosen(self, text: str) -> None:
        self.panel.set_system_prompt(text)
        self.session.set_system_prompt(text)

    def on_session_context_changed(self, used: int, total: int, cached: int) -> None:
        self.status.show_context(used, total, cached)

    def on_session_context_restored(self, restored: int) -> None:
        self.status.set_restored(restored)

    # -- delete with undo -------------------------------------------------------------------
    def on_sidebar_delete_requested(self, conversation_id: str) -> None:
        self._deleted.append(conversation_id)
        self.undo_button.setVisible(True)
        self._undo_timer.start()
        self._run(self.session.delete_conversation(conversation_id))
        self.on_session_notice(self.tr("Chat moved to the trash."))

    def on_undo_clicked(self) -> None:
        if self._deleted:
            self._run(self.session.restore_conversation(self._deleted.pop()))
        self.undo_button.setVisible(bool(self._deleted))

    def _on_undo_timer_timeout(self) -> None:
        self._deleted.clear()
        self.undo_button.setVisible(False)

    def _run(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.session.spawn(coro)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_width(event.size().width())

    def _fit_width(self, width: int) -> None:
        """Fold the settings panel and narrow the sidebar in a small window (once per crossing,
        so the toolbar toggle still shows the panel on demand)."""
        narrow = width < NARROW_WIDTH
        if narrow == self._narrow:
            return
        self._narrow = narrow
        self.panel_action.setChecked(not narrow)
        self.panel_scroll.setVisible(not narrow)
        self.sidebar.setMaximumWidth(NARROW_SIDEBAR_WIDTH if narrow else 16777215)
        sizes = self.splitter.sizes()
        side = NARROW_SIDEBAR_WIDTH if narrow else SIDEBAR_WIDTH
        self.splitter.setSizes([side, max(1, width - side - (0 if narrow else sizes[2])), sizes[2]])

    def closeEvent(self, event: QCloseEvent) -> None:
        self.sig_closing.emit()
        super().closeEvent(event)
