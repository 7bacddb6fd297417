"""The sampling side panel: sliders + numeric fields, limits, stop strings, system prompt, presets.

Owns turning widget values into a validated `SamplingParams` and emitting
``sig_params_changed`` on every change (the session forwards it to `LiveParams`, so moving a
slider while a reply streams applies from the next token), and greying out the controls the
loaded backend ignores (`ModelInfo.supported_params`, e.g. top-k on an OpenAI endpoint). Does
not own persistence: the application reads `params()` and preset names and saves them through
`app.system.settings`.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine.errors import InvalidParamsError
from engine.types import SamplingParams

SEED_RANDOM = -1
# Controls a backend may ignore, by `SamplingParams` field; max tokens is always honoured.
OPTIONAL_PARAMS = ("temperature", "top_k", "top_p", "min_p", "repetition_penalty", "seed", "stop")


@dataclass(frozen=True, slots=True)
class SliderSpec:
    name: str  # SamplingParams field
    low: float
    high: float
    step: float
    decimals: int


SLIDERS = (
    SliderSpec("temperature", 0.0, 2.0, 0.01, 2),
    SliderSpec("top_k", 0, 200, 1, 0),
    SliderSpec("top_p", 0.01, 1.0, 0.01, 2),
    SliderSpec("min_p", 0.0, 0.99, 0.01, 2),
    SliderSpec("repetition_penalty", 0.5, 2.0, 0.01, 2),
)


class SliderField(QWidget):
    """A slider and a spin box showing one value; either one edits it."""

    sig_value_changed = Signal(float)

    def __init__(self, spec: SliderSpec, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.spec = spec
        self.slider = QSlider(Qt.Orientation.Horizontal, self)
        self.slider.setObjectName(f"slider_{spec.name}")
        self.slider.setRange(0, round((spec.high - spec.low) / spec.step))
        self.spin: QDoubleSpinBox | QSpinBox
        if spec.decimals:
            self.spin = QDoubleSpinBox(self)
            self.spin.setDecimals(spec.decimals)
            self.spin.setSingleStep(spec.step)
        else:
            self.spin = QSpinBox(self)
        self.spin.setObjectName(f"spin_{spec.name}")
        self.spin.setRange(spec.low, spec.high)  # type: ignore[arg-type]
        self.spin.setFixedWidth(72)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.slider, 1)
        layout.addWidget(self.spin)
        self.slider.valueChanged.connect(self._on_slider_value_changed)
        self.spin.valueChanged.connect(self._on_spin_value_changed)

    def value(self) -> float:
        return float(self.spin.value())

    def set_value(self, value: float) -> None:
        self.spin.setValue(value)  # type: ignore[arg-type]

    def _on_slider_value_changed(self, position: int) -> None:
        value = self.spec.low + position * self.spec.step
        self.spin.setValue(round(value, self.spec.decimals) if self.spec.decimals else round(value))

    def _on_spin_value_changed(self, value: float) -> None:
        self.slider.blockSignals(True)
        self.slider.setValue(round((value - self.spec.low) / self.spec.step))
        self.slider.blockSignals(False)
        self.sig_value_changed.emit(float(value))


class SamplingPanel(QWidget):
    sig_params_changed = Signal(object)  # SamplingParams
    sig_system_prompt_changed = Signal(str)
    sig_preset_chosen = Signal(str)
    sig_preset_save_requested = Signal(str)  # name
    sig_error = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("samplingPanel")
        self._loading = False
        self._params = SamplingParams()
        self.presets = QComboBox(self)
        self.presets.setObjectName("presetCombo")
        self.save_preset = QPushButton(self.tr("Save as…"), self)
        self.fields = {spec.name: SliderField(spec, self) for spec in SLIDERS}
        self.max_tokens = QSpinBox(self)
        self.max_tokens.setRange(1, 32768)
        self.seed = QSpinBox(self)
        self.seed.setRange(SEED_RANDOM, 2**31 - 1)
        self.seed.setSpecialValueText(self.tr("random"))
        self.stop = QLineEdit(self)
        self.stop.setPlaceholderText(self.tr(r"e.g. </s>, \n\n"))
        self.stop.setToolTip(self._own_tooltip("stop"))
        self.system_prompt = QPlainTextEdit(self)
        self.system_prompt.setObjectName("systemPrompt")
        self.system_prompt.setPlaceholderText(self.tr("You are a helpful assistant."))
        self.system_prompt.setFixedHeight(90)
        self._labels: dict[str, QLabel] = {}
        self._build_layout()
        self._connect()

    def _build_layout(self) -> None:
        labels = {
            "temperature": self.tr("Temperature"),
            "top_k": self.tr("Top-k"),
            "top_p": self.tr("Top-p"),
            "min_p": self.tr("Min-p"),
            "repetition_penalty": self.tr("Repetition penalty"),
        }
        presets_row = QHBoxLayout()
        presets_row.addWidget(self.presets, 1)
        presets_row.addWidget(self.save_preset)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow(self.tr("Preset"), presets_row)
        labels |= {"seed": self.tr("Seed"), "stop": self.tr("Stop strings")}
        for name, field in self.fields.items():
            form.addRow(self._label(name, labels[name]), field)
        form.addRow(self.tr("Max tokens"), self.max_tokens)
        form.addRow(self._label("seed", labels["seed"]), self.seed)
        form.addRow(self._label("stop", labels["stop"]), self.stop)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        title = QLabel(self.tr("Sampling"), self)
        title.setObjectName("panelTitle")
        hint = QLabel(self.tr("Changes apply from the next token, even while a reply is written."))
        hint.setWordWrap(True)
        hint.setObjectName("hint")
        layout.addWidget(title)
        layout.addWidget(hint)
        layout.addLayout(form)
        layout.addWidget(QLabel(self.tr("System prompt"), self))
        layout.addWidget(self.system_prompt)
        layout.addStretch(1)

    def _label(self, name: str, text: str) -> QLabel:
        self._labels[name] = QLabel(text, self)
        return self._labels[name]

    def _connect(self) -> None:
        for field in self.fields.values():
            field.sig_value_changed.connect(self._on_any_changed)
        self.max_tokens.valueChanged.connect(self._on_any_changed)
        self.seed.valueChanged.connect(self._on_any_changed)
        self.stop.editingFinished.connect(self._on_any_changed)
        self.system_prompt.textChanged.connect(self._on_system_prompt_changed)
        self.presets.activated.connect(self._on_presets_activated)
        self.save_preset.clicked.connect(self._on_save_preset_clicked)

    # -- public -----------------------------------------------------------------------------
    def params(self) -> SamplingParams:
        return self._params

    def set_params(self, params: SamplingParams) -> None:
        """Show ``params`` without emitting a change per widget."""
        self._loading = True
        try:
            for name, field in self.fields.items():
                field.set_value(getattr(params, name))
            self.max_tokens.setValue(params.max_new_tokens)
            self.seed.setValue(SEED_RANDOM if params.seed is None else min(params.seed, 2**31 - 1))
            self.stop.setText(", ".join(_escape(s) for s in params.stop))
        finally:
            self._loading = False
        self._params = params

    def control(self, name: str) -> QWidget:
        """The widget that edits the `SamplingParams` field ``name`` (one of OPTIONAL_PARAMS)."""
        return {"seed": self.seed, "stop": self.stop}.get(name) or self.fields[name]

    def set_supported(self, supported: frozenset[str] | None) -> None:
        """Grey out every optional control whose field is not in ``supported`` (the loaded
        backend's `ModelInfo.supported_params`); None (no model, the local engine) enables all.
        Values are kept: switching back to a backend that honours them restores them as set."""
        for name in OPTIONAL_PARAMS:
            on = supported is None or name in supported
            label, control = self._labels[name], self.control(name)
            ignored = self.tr("The current model's endpoint ignores {0}.").format(label.text())
            label.setEnabled(on)
            label.setToolTip("" if on else ignored)
            control.setEnabled(on)
            control.setToolTip(self._own_tooltip(name) if on else ignored)

    def _own_tooltip(self, name: str) -> str:
        if name == "stop":
            return self.tr(r"Comma-separated; write \n for a newline, \\ for \.")
        return ""

    def set_presets(self, names: list[tuple[str, str]], current: str) -> None:
        """``names``: (key, shown label) pairs; ``current`` is the selected key."""
        self.presets.clear()
        for key, label in names:
            self.presets.addItem(label, key)
        index = self.presets.findData(current)
        self.presets.setCurrentIndex(max(index, 0))

    def system_prompt_text(self) -> str:
        return self.system_prompt.toPlainText()

    def set_system_prompt(self, text: str) -> None:
        self.system_prompt.blockSignals(True)
        self.system_prompt.setPlainText(text)
        self.system_prompt.blockSignals(False)

    # -- slots ------------------------------------------------------------------------------
    def _on_any_changed(self, *_args: object) -> None:
        if self._loading:
            return
        try:
            params = self._read()
        except InvalidParamsError as exc:
            self.sig_error.emit(str(exc))
            return
        if params != self._params:
            self._params = params
            self.sig_params_changed.emit(params)

    def _read(self) -> SamplingParams:
        seed = self.seed.value()
        return SamplingParams(
            temperature=round(self.fields["temperature"].value(), 4),
            top_k=int(self.fields["top_k"].value()),
            top_p=round(self.fields["top_p"].value(), 4),
            min_p=round(self.fields["min_p"].value(), 4),
            repetition_penalty=round(self.fields["repetition_penalty"].value(), 4),
            max_new_tokens=self.max_tokens.value(),
            seed=None if seed == SEED_RANDOM else seed,
            stop=tuple(_parse_stop(self.stop.text())),
        )

    def _on_system_prompt_changed(self) -> None:
        self.sig_system_prompt_changed.emit(self.system_prompt.toPlainText())

    def _on_presets_activated(self, index: int) -> None:
        key = self.presets.itemData(index)
        if key:
            self.sig_preset_chosen.emit(str(key))

    def _on_save_preset_clicked(self) -> None:
        name, ok = QInputDialog.getText(self, self.tr("Save preset"), self.tr("Preset name:"))
        if ok and name.strip():
            self.sig_preset_save_requested.emit(name.strip())


def _parse_stop(text: str) -> list[str]:
    # Only \n, \t and \\ are escapes: unicode_escape would mangle Chinese stop strings.
    parts = [p.strip() for p in text.split(",")]
    return [_unescape(p) for p in parts if p]


def _unescape(text: str) -> str:
    out, chars = [], iter(text)
    for ch in chars:
        if ch == "\\":
            nxt = next(chars, "")
            out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
        else:
            out.append(ch)
    return "".join(out)


def _escape(stop: str) -> str:
    return stop.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
