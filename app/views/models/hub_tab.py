"""The "Hub" tab of the models dialog: which Hub (or mirror) to use, and the Hub token.

The address is saved in the app's settings (`Settings.set_hub_endpoint`; empty: ``HF_ENDPOINT``
or huggingface.co), with one click for hf-mirror.com, the mirror users in mainland China
reach. The token (needed for gated repositories such as Llama and Gemma) goes to the system
keyring through `KeyStore.set_hub_token`, or for this session only into memory where no
keyring exists; it is never shown again or written to a file.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.system.secrets import KeyringUnavailableError, KeyStore
from app.system.settings import HUB_MIRROR_ENDPOINT, Settings


class HubTab(QWidget):
    """Edit the Hub address and token."""

    sig_changed = Signal()  # address or token changed: verdicts are fetched again

    def __init__(self, settings: Settings, keys: KeyStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("hubTab")
        self._settings = settings
        self._keys = keys
        self._build()
        self._refresh()

    def _build(self) -> None:
        self.endpoint_edit = QLineEdit(self)
        self.mirror_button = QPushButton(self.tr("Use hf-mirror.com (China)"), self)
        self.default_button = QPushButton(self.tr("Use huggingface.co"), self)
        self.save_endpoint_button = QPushButton(self.tr("Save address"), self)
        endpoint_row = QHBoxLayout()
        for b in (self.save_endpoint_button, self.mirror_button, self.default_button):
            endpoint_row.addWidget(b)
        endpoint_row.addStretch(1)
        self.token_edit = QLineEdit(self)
        self.token_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.save_token_button = QPushButton(self.tr("Save token"), self)
        self.forget_token_button = QPushButton(self.tr("Forget token"), self)
        token_row = QHBoxLayout()
        token_row.addWidget(self.save_token_button)
        token_row.addWidget(self.forget_token_button)
        token_row.addStretch(1)
        help_text = QLabel(
            self.tr(
                "Gated models (Llama, Gemma) need a free Hugging Face account: accept the "
                "model's licence on its Hub page, create a read token under Settings → Access "
                "Tokens, and paste it here."
            ),
            self,
        )
        help_text.setWordWrap(True)
        self.note = QLabel(self)
        self.note.setObjectName("hubNote")
        self.note.setWordWrap(True)
        form = QFormLayout()
        form.addRow(self.tr("Hub address"), self.endpoint_edit)
        form.addRow("", endpoint_row)
        form.addRow(self.tr("Hub token"), self.token_edit)
        form.addRow("", token_row)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(help_text)
        layout.addWidget(self.note)
        layout.addStretch(1)
        self.save_endpoint_button.clicked.connect(self.on_save_endpoint_clicked)
        self.endpoint_edit.returnPressed.connect(self.on_save_endpoint_clicked)
        self.mirror_button.clicked.connect(lambda: self.use_endpoint(HUB_MIRROR_ENDPOINT))
        self.default_button.clicked.connect(lambda: self.use_endpoint(""))
        self.save_token_button.clicked.connect(self.on_save_token_clicked)
        self.token_edit.returnPressed.connect(self.on_save_token_clicked)
        self.forget_token_button.clicked.connect(self.on_forget_token_clicked)

    def _refresh(self, message: str = "") -> None:
        # Empty means "not chosen here": HF_ENDPOINT or huggingface.co, shown as the placeholder.
        self.endpoint_edit.setText(self._settings.saved_hub_endpoint())
        saved = self._settings.saved_hub_endpoint()
        self.endpoint_edit.setPlaceholderText("" if saved else self._settings.hub_endpoint())
        has_token = self._keys.hub_token() is not None
        self.token_edit.setPlaceholderText(
            self.tr("(a token is set — type to replace it)") if has_token else self.tr("(none)")
        )
        self.forget_token_button.setEnabled(has_token)
        reason = self._keys.unavailable_reason()
        where = (
            self.tr("Tokens are saved in the system keyring, never in Hearth's files.")
            if reason is None
            else self.tr("No keyring ({0}): a token is kept only until Hearth quits.").format(
                reason
            )
        )
        self.note.setText(f"{message}\n{where}" if message else where)

    def focus_token(self) -> None:
        self.token_edit.setFocus()

    # ---- slots ----------------------------------------------------------------------------

    def use_endpoint(self, url: str) -> None:
        self.endpoint_edit.setText(url)
        self.on_save_endpoint_clicked()

    def on_save_endpoint_clicked(self) -> bool:
        try:
            self._settings.set_hub_endpoint(self.endpoint_edit.text())
        except ValueError:
            self._refresh(self.tr("The address must start with http:// or https://."))
            return False
        self._refresh(self.tr("Using {0}.").format(self._settings.hub_endpoint()))
        self.sig_changed.emit()
        return True

    def on_save_token_clicked(self) -> None:
        token = self.token_edit.text().strip()
        self.token_edit.clear()  # the token does not stay in the widget
        if not token:
            return
        try:
            self._keys.set_hub_token(token)
            message = self.tr("The token was saved.")
        except KeyringUnavailableError:
            self._keys.set_session_hub_token(token)
            message = self.tr("The token is kept for this session only.")
        self._refresh(message)
        self.sig_changed.emit()

    def on_forget_token_clicked(self) -> None:
        try:
            self._keys.delete_hub_token()
            message = self.tr("The token was removed.")
        except KeyringUnavailableError as exc:
            message = str(exc)
        self._refresh(message)
        self.sig_changed.emit()
