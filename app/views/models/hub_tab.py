"""The "Hub" tab of the models dialog: which Hub (or mirror) to use, and the Hub token.

The address is saved in the app's settings (`Settings.set_hub_endpoint`; empty: ``HF_ENDPOINT``
or huggingface.co), with one click for hf-mirror.com, the mirror users in mainland China
reach. The token (needed for gated repositories such as Llama and Gemma) goes to the system
keyring through `KeyStore.set_hub_token`, or for this session only into memory where no
keyring exists; it is never shown again or written to a file. A mirror gets the token only
once the user said yes for it: asked once per mirror when a token and a mirror meet
(`app.hub.token_hosts`).
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.hub.token_hosts import host_to_ask_about
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
        self.token_host_box: QMessageBox | None = None  # the open question, if any
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
        self.ask_about_token_host()
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
        self.ask_about_token_host()

    def ask_about_token_host(self) -> None:
        """Ask (once per mirror, remembered) whether the token may go to the mirror in use.
        Window-modal but not blocking: the answer arrives in `on_token_host_answered`."""
        answers = self._settings.token_host_answers()
        has_token = self._keys.hub_token() is not None
        origin = host_to_ask_about(self._settings.hub_endpoint(), has_token, answers)
        if origin is None or self.token_host_box is not None:
            return
        box = QMessageBox(self)
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle(self.tr("Send the Hub token to this mirror?"))
        box.setText(
            self.tr(
                "Your Hub token was made for huggingface.co. {0} is run by others: send it "
                "there only if you trust it (gated models there need it)."
            ).format(origin)
        )
        box.setStandardButtons(QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)
        box.setDefaultButton(QMessageBox.StandardButton.No)
        box.finished.connect(lambda _result: self.on_token_host_answered(origin, box))
        self.token_host_box = box
        box.open()

    def on_token_host_answered(self, origin: str, box: QMessageBox) -> None:
        self.token_host_box = None
        yes = QMessageBox.StandardButton.Yes
        allowed = box.standardButton(box.clickedButton()) == yes  # closed: no
        self._settings.set_token_host_answer(origin, allowed)
        self._refresh(
            self.tr("The token goes to {0}.").format(origin)
            if allowed
            else self.tr("The token is not sent to {0}.").format(origin)
        )
        self.sig_changed.emit()

    def on_forget_token_clicked(self) -> None:
        try:
            self._keys.delete_hub_token()
            message = self.tr("The token was removed.")
        except KeyringUnavailableError as exc:
            message = str(exc)
        self._refresh(message)
        self.sig_changed.emit()
