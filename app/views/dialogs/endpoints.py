"""The "Remote endpoints" dialog: add, edit, remove and test OpenAI-compatible endpoints.

Shows the saved endpoints on the left and a form on the right (name, base URL, kind, API key,
model with a list fetched from the server's ``/v1/models``). The key field is write-only: a
typed key goes to the OS keyring (`app.system.secrets.KeyStore`), or, where no keyring
exists and the user agrees, into memory for this session; it is never shown again, saved in
a file or logged.

Knows nothing about HTTP: ``list_models`` is an async callable the composition root provides
(the bridge runs `engine.remote.list_models` on a worker thread). Emits ``sig_endpoints_changed``
after every save or removal and ``sig_use_requested(endpoint_id)`` for "Use this endpoint".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)
from qasync import asyncSlot

from app.system.endpoints import KINDS, Endpoint, EndpointError, EndpointList
from app.system.secrets import KeyringUnavailableError, KeyStore

# (base_url, api_key or None) -> model ids; raises EngineError with a user-facing message.
ModelLister = Callable[[str, str | None], Awaitable[list[str]]]
_ID_ROLE = Qt.ItemDataRole.UserRole


class EndpointsDialog(QDialog):
    """Manage saved remote endpoints and their keys."""

    sig_endpoints_changed = Signal()
    sig_use_requested = Signal(str)  # endpoint id

    def __init__(
        self,
        endpoints: EndpointList,
        keys: KeyStore,
        list_models: ModelLister | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("endpointsDialog")
        self.setWindowTitle(self.tr("Remote endpoints"))
        self.resize(760, 420)
        self._endpoints = endpoints
        self._keys = keys
        self._list_models = list_models
        self._current_id: str | None = None
        self._build()
        self._reload_list()
        self._show_endpoint(None)

    # ---- layout ---------------------------------------------------------------------------

    def _build(self) -> None:
        self.list = QListWidget(self)
        self.add_button = QPushButton(self.tr("New"), self)
        self.remove_button = QPushButton(self.tr("Remove"), self)
        left = QVBoxLayout()
        left.addWidget(self.list)
        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        left.addLayout(buttons)
        top = QHBoxLayout()
        top.addLayout(left, 1)
        top.addLayout(self._build_form(), 2)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        self.status = QLabel(self)
        self.status.setObjectName("endpointStatus")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.status)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        close.rejected.connect(self.reject)
        layout.addWidget(close)
        self.list.currentItemChanged.connect(self.on_list_current_changed)
        self.add_button.clicked.connect(self.on_add_clicked)
        self.remove_button.clicked.connect(self.on_remove_clicked)

    def _build_form(self) -> QVBoxLayout:
        self.name_edit = QLineEdit(self)
        self.url_edit = QLineEdit(self)
        self.url_edit.setPlaceholderText("http://localhost:8000/v1")
        self.kind_box = QComboBox(self)
        for kind in KINDS:
            self.kind_box.addItem(self._kind_label(kind), kind)
        self.key_edit = QLineEdit(self)
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.session_only = QCheckBox(self.tr("Keep the key for this session only"), self)
        self.key_note = QLabel(self)
        self.key_note.setWordWrap(True)
        self.forget_key_button = QPushButton(self.tr("Forget saved key"), self)
        self.model_box = QComboBox(self)
        self.model_box.setEditable(True)
        self.fetch_button = QPushButton(self.tr("List models"), self)
        model_row = QHBoxLayout()
        model_row.addWidget(self.model_box, 1)
        model_row.addWidget(self.fetch_button)
        form = QFormLayout()
        form.addRow(self.tr("Name"), self.name_edit)
        form.addRow(self.tr("Base URL"), self.url_edit)
        form.addRow(self.tr("Server kind"), self.kind_box)
        form.addRow(self.tr("API key"), self.key_edit)
        form.addRow("", self.session_only)
        form.addRow("", self.key_note)
        form.addRow("", self.forget_key_button)
        form.addRow(self.tr("Model"), model_row)
        self.save_button = QPushButton(self.tr("Save"), self)
        self.test_button = QPushButton(self.tr("Test connection"), self)
        self.use_button = QPushButton(self.tr("Use this endpoint"), self)
        actions = QHBoxLayout()
        for button in (self.save_button, self.test_button, self.use_button):
            actions.addWidget(button)
        column = QVBoxLayout()
        column.addLayout(form)
        column.addLayout(actions)
        column.addStretch(1)
        self.save_button.clicked.connect(self.on_save_clicked)
        self.forget_key_button.clicked.connect(self.on_forget_key_clicked)
        self.use_button.clicked.connect(self.on_use_clicked)
        self.fetch_button.clicked.connect(self.on_fetch_clicked)
        self.test_button.clicked.connect(self.on_test_clicked)
        return column

    def _kind_label(self, kind: str) -> str:
        labels = {
            "auto": self.tr("Detect automatically"),
            "generic": self.tr("Other OpenAI-compatible server"),
            "hearth": self.tr("Hearth"),
            "vllm": self.tr("vLLM"),
            "sglang": "SGLang",  # a name, the same in every language
            "llamacpp": self.tr("llama.cpp server"),
            "ollama": self.tr("Ollama"),
            "tgi": self.tr("Text Generation Inference"),
            "openai": self.tr("OpenAI"),
        }
        return labels.get(kind, kind)

    # ---- showing --------------------------------------------------------------------------

    def _reload_list(self, select_id: str | None = None) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        for endpoint in self._endpoints:
            item = QListWidgetItem(endpoint.name, self.list)
            item.setData(_ID_ROLE, endpoint.id)
            if endpoint.id == select_id:
                self.list.setCurrentItem(item)
        self.list.blockSignals(False)

    def _show_endpoint(self, endpoint: Endpoint | None) -> None:
        self._current_id = endpoint.id if endpoint else None
        self.name_edit.setText(endpoint.name if endpoint else "")
        self.url_edit.setText(endpoint.base_url if endpoint else "")
        self.kind_box.setCurrentIndex(
            max(0, self.kind_box.findData(endpoint.kind if endpoint else "auto"))
        )
        self.model_box.clear()
        self.model_box.setEditText(endpoint.model if endpoint else "")
        self.key_edit.clear()
        self._enable_saved_actions(endpoint is not None)
        self._refresh_key_state()

    def _enable_saved_actions(self, saved: bool) -> None:
        self.remove_button.setEnabled(saved)
        self.use_button.setEnabled(saved)

    def _refresh_key_state(self) -> None:
        reason = self._keys.unavailable_reason()
        if reason is not None:
            # No keyring: a key can only live in memory; say so rather than write it anywhere.
            self.session_only.setChecked(True)
            self.session_only.setEnabled(False)
            note = self.tr(
                "Keys cannot be saved: {reason}. A key you type is kept only until Hearth quits."
            ).format(reason=reason)
        else:
            self.session_only.setEnabled(True)
            note = self.tr("Keys are saved in the system keyring, never in Hearth's files.")
        has_key = self._current_id is not None and self._has_key(self._current_id)
        self.key_edit.setPlaceholderText(
            self.tr("(a key is set — type to replace it)") if has_key else self.tr("(none)")
        )
        self.forget_key_button.setEnabled(has_key)
        self.key_note.setText(note)

    def _has_key(self, endpoint_id: str) -> bool:
        try:
            return self._keys.get(endpoint_id) is not None
        except KeyringUnavailableError:
            return False

    def _set_status(self, text: str, error: bool = False) -> None:
        self.status.setProperty("error", error)
        self.status.setText(text)

    # ---- slots ----------------------------------------------------------------------------

    def on_list_current_changed(self, current: QListWidgetItem | None, _previous: object) -> None:
        endpoint = self._endpoints.get(current.data(_ID_ROLE)) if current else None
        self._show_endpoint(endpoint)
        self._set_status("")

    def on_add_clicked(self) -> None:
        self.list.setCurrentRow(-1)
        self._show_endpoint(None)
        self.name_edit.setFocus()

    def on_remove_clicked(self) -> None:
        if self._current_id is None:
            return
        endpoint_id = self._current_id
        try:
            self._endpoints.remove(endpoint_id)
            self._keys.delete(endpoint_id)
        except (EndpointError, KeyringUnavailableError) as exc:
            self._set_status(str(exc), error=True)
        self._reload_list()
        self._show_endpoint(None)
        self.sig_endpoints_changed.emit()

    def on_save_clicked(self) -> bool:
        """Save the form; the typed key goes to the keyring (or the session). True on success."""
        try:
            endpoint = self._form_endpoint()
            if self._endpoints.get(endpoint.id) is None:
                self._endpoints.add(endpoint)
            else:
                self._endpoints.update(endpoint)
        except EndpointError as exc:
            self._set_status(str(exc), error=True)
            return False
        self._current_id = endpoint.id
        self._enable_saved_actions(True)
        warned = self._store_typed_key(endpoint.id)
        self._reload_list(select_id=endpoint.id)
        self._refresh_key_state()
        if not warned:
            self._set_status(self.tr("Saved “{name}”.").format(name=endpoint.name))
        self.sig_endpoints_changed.emit()
        return True

    def on_forget_key_clicked(self) -> None:
        if self._current_id is None:
            return
        try:
            self._keys.delete(self._current_id)
            self._set_status(self.tr("The key was removed."))
        except KeyringUnavailableError as exc:
            self._set_status(str(exc), error=True)
        self._refresh_key_state()

    def on_use_clicked(self) -> None:
        if self._current_id is not None and self.on_save_clicked():
            self.sig_use_requested.emit(self._current_id)

    @asyncSlot()
    async def on_fetch_clicked(self) -> None:
        await self.fetch_models()

    @asyncSlot()
    async def on_test_clicked(self) -> None:
        models = await self.fetch_models()
        model = self.model_box.currentText().strip()
        if models and model and model not in models:
            self._set_status(
                self.tr("Connected, but the server does not list “{model}”.").format(model=model),
                error=True,
            )

    # ---- work -----------------------------------------------------------------------------

    async def fetch_models(self) -> list[str]:
        """Ask the server in the form for its models; fill the model box. [] on failure."""
        if self._list_models is None:
            self._set_status(self.tr("Listing models is not available here."), error=True)
            return []
        url = self.url_edit.text().strip()
        key = self.key_edit.text().strip() or self._saved_key()
        self._set_busy(True)
        self._set_status(self.tr("Connecting to {url}…").format(url=url))
        try:
            models = await self._list_models(url, key)
        except Exception as exc:  # EngineError messages are user-facing and key-free
            self._set_status(str(exc) or type(exc).__name__, error=True)
            return []
        finally:
            self._set_busy(False)
        current = self.model_box.currentText()
        self.model_box.clear()
        self.model_box.addItems(models)
        self.model_box.setEditText(current if current in models or not models else models[0])
        self._set_status(self.tr("Connected: the server offers %n model(s).", "", len(models)))
        return models

    def _saved_key(self) -> str | None:
        if self._current_id is None:
            return None
        try:
            return self._keys.get(self._current_id)
        except KeyringUnavailableError:
            return None

    def _set_busy(self, busy: bool) -> None:
        for button in (self.fetch_button, self.test_button, self.save_button):
            button.setEnabled(not busy)

    def _form_endpoint(self) -> Endpoint:
        return Endpoint(
            name=self.name_edit.text(),
            base_url=self.url_edit.text(),
            model=self.model_box.currentText(),
            kind=str(self.kind_box.currentData()),
            id=self._current_id or "",
        )

    def _store_typed_key(self, endpoint_id: str) -> bool:
        """Move a typed key out of the widget into the keyring or the session store.

        Returns True when it put a warning in the status line (the keyring refused)."""
        key = self.key_edit.text().strip()
        self.key_edit.clear()  # the key does not stay in the widget
        if not key:
            return False
        if self.session_only.isChecked():
            self._keys.set_session_key(endpoint_id, key)
            return False
        try:
            self._keys.set(endpoint_id, key)
            return False
        except KeyringUnavailableError as exc:
            self._keys.set_session_key(endpoint_id, key)
            self._set_status(
                self.tr("{problem}. The key is kept for this session only.").format(problem=exc),
                error=True,
            )
            return True
