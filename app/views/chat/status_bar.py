"""The main window's status bar: state, load progress, context meter, model and server labels.

Owns the labels and the progress bar at the bottom of the window and what they say: the
session's state, a model's load progress (through `LoadProgressView`) and an idle reload, the
context used / total with how many tokens were cached or restored from disk (and what the
draft's images will add: "+ ≈ 280 for images"; sent ones are in the count itself), the loaded model
with its quantisation (and "can see" when it reads images), and the local server's address.
Does not own the session, the undo button (the window's delete-with-undo) or what the
slow-path button does (`SlowPathNotice`).

Its words are filed under the translation context "MainWindow", where they lived before this
module was split out of `app.views.main_window`.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QLocale, QObject, Qt
from PySide6.QtWidgets import QLabel, QMainWindow, QProgressBar, QStatusBar, QWidget

from app.chat.session import State
from app.views.chat.load_progress import LoadProgressView
from engine.types import LoadProgress, ModelInfo


def count_text(count: int) -> str:
    """``count`` with the digits grouped as the user's locale groups them; the bare C locale
    (a desktop session without LANG) groups as English does rather than not at all."""
    locale = QLocale()
    if locale.language() == QLocale.Language.C:
        locale = QLocale(QLocale.Language.English, QLocale.Country.UnitedStates)
    return locale.toString(count)


class StatusBar(QObject):
    """The widgets of ``window``'s status bar and the text each shows."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.bar: QStatusBar = window.statusBar()
        self.state_label = QLabel(window)
        self.model_label = QLabel(window)
        self.context_label = QLabel(window)
        self.context_label.setObjectName("contextLabel")
        self.server_label = QLabel(window)
        self.server_label.setObjectName("serverLabel")
        self.server_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.server_label.setVisible(False)
        self.progress = QProgressBar(window)
        self.progress.setMaximumWidth(180)
        self.progress.setVisible(False)
        self.load_time_label = QLabel(window)
        self.load_view = LoadProgressView(
            self.state_label, self.progress, self.load_time_label, window
        )
        self._reloading = False  # a "reload" report came; its "ready" replaces it here
        self._restored = 0  # the last reply's tokens read back from its chat's saved cache
        self._context = (0, 0, 0)  # the last used, total, cached shown
        self._draft_images = 0  # tokens the images waiting in the composer will take

    def add_widgets(self, undo_button: QWidget, slow_path_button: QWidget) -> None:
        """Place the labels, with the window's undo and slow-path buttons between them."""
        for widget in (self.state_label, self.progress, self.load_time_label, undo_button):
            self.bar.addWidget(widget)
        for widget in (self.server_label, self.context_label, slow_path_button):
            self.bar.addPermanentWidget(widget)
        self.bar.addPermanentWidget(self.model_label)

    def add_why_slow(self, link: QWidget) -> None:
        """Place the "Why is this slow?" link (`app.views.chat.why_slow`) at the right end."""
        self.bar.addPermanentWidget(link)

    def show_state(self, state: State, has_model: bool) -> None:
        names = {
            State.IDLE: QCoreApplication.translate("MainWindow", "Ready")
            if has_model
            else QCoreApplication.translate("MainWindow", "No model"),
            State.LOADING: QCoreApplication.translate("MainWindow", "Loading model…"),
            State.GENERATING: QCoreApplication.translate("MainWindow", "Writing…"),
            State.STOPPING: QCoreApplication.translate("MainWindow", "Stopping…"),
        }
        self.state_label.setText(names.get(state, state.value))
        self.state_label.setToolTip("")
        loading = state == State.LOADING
        if loading:
            self.load_view.start()
        else:
            self.load_view.stop()
        # While loading, the old model's name and context are stale; hiding them also leaves
        # the progress message room to show in full ("Converting … (once; …)").
        self.model_label.setVisible(not loading)
        self.context_label.setVisible(not loading)

    def show_model(self, info: ModelInfo | None) -> None:
        if info is None:
            self.model_label.setText("")
            return
        # The file's own type ("Q4_K_M") as people know it; the tensors' mix in the tooltip.
        text = f"{info.name} · {info.device} · {info.quant or info.dtype}"
        tip = QCoreApplication.translate("MainWindow", "{0} on {1} ({2}); weights: {3}").format(
            info.name, info.device, info.backend, info.dtype
        )
        if info.kernel_note:  # Hearth's kernel does not run on this machine: say which runs
            text += " · " + QCoreApplication.translate("MainWindow", "ONNX Runtime kernels")
            tip += "\n" + QCoreApplication.translate("MainWindow", "Kernels: {0}").format(
                info.kernel_note
            )
        if not info.vision_refusal:  # a projector is loaded (or a remote endpoint takes images)
            text += " · " + QCoreApplication.translate("MainWindow", "can see")
            tip += "\n" + QCoreApplication.translate("MainWindow", "Reads images")
            if info.image_tokens:
                tip += QCoreApplication.translate(
                    "MainWindow", " (≈ {0} tokens a typical image)"
                ).format(count_text(info.image_tokens))
        self.model_label.setText(text)
        self.model_label.setToolTip(tip)
        self.show_context(0, info.context_window, 0)

    def show_load_progress(self, progress: LoadProgress, loading: bool) -> None:
        if loading:
            self.load_view.on_progress(progress)
        elif progress.stage == "reload":  # unloaded while idle: this message reloads it
            self._reloading = True
            self.bar.showMessage(progress.message)
        elif progress.stage == "ready" and self._reloading:
            # The reply that asked for the reload is being written now: the state label says
            # so ("Writing…"); a six-second "… ready on cpu" over it read as the model idling.
            self._reloading = False
            self.bar.clearMessage()
            self.state_label.setToolTip(progress.message)

    def show_unloaded(self, minutes: int) -> None:
        """The idle model was unloaded: said in the state label, which keeps its room until
        the state changes, not as a passing message the permanent labels squeeze and cut."""
        self.state_label.setText(
            QCoreApplication.translate("MainWindow", "Model unloaded after {0} min idle").format(
                minutes
            )
        )
        self.state_label.setToolTip(
            QCoreApplication.translate("MainWindow", "Your next message reloads it.")
        )

    def show_draft_images(self, tokens: int) -> None:
        """The images waiting in the composer will take ``tokens`` more of the context."""
        self._draft_images = tokens
        self.show_context(*self._context)

    def show_context(self, used: int, total: int, cached: int) -> None:
        # Every figure grouped the user's way ("1,949 / 8,192"; "1.949 / 8.192" in German):
        # only one of them had a separator, and an English one at that.
        self._context = (used, total, cached)
        number = count_text
        total_text = number(total) if total else "?"
        restored = self._restored if cached else 0  # nothing cached: another chat, or cold
        if restored:  # a chat reopened after a restart resumed from its saved cache
            text = QCoreApplication.translate(
                "MainWindow", "Context {0} / {1} tokens ({2} restored)"
            ).format(number(used), total_text, number(restored))
        else:
            text = QCoreApplication.translate(
                "MainWindow", "Context {0} / {1} tokens ({2} cached)"
            ).format(number(used), total_text, number(cached))
        if self._draft_images:
            text += QCoreApplication.translate("MainWindow", " + ≈ {0} for images").format(
                number(self._draft_images)
            )
        self.context_label.setText(text)

    def set_restored(self, restored: int) -> None:
        self._restored = restored
