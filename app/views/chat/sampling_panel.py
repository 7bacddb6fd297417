"""The sampling side panel: sliders + numeric fields, limits, stop strings, system prompt, presets.

Owns turning widget values into a validated `SamplingParams` and emitting
``sig_params_changed`` on every change (the session forwards it to `LiveParams`, so moving a
slider while a reply streams applies from the next token), greying out the controls the
loaded backend ignores (`ModelInfo.supported_params`, e.g. top-k on an OpenAI endpoint), and
showing "Custom" in the preset box once the sliders leave every preset. One slider per
`engine.params` row that has a ``slider``: ranges, steps and labels come from that table.
Does not own persistence: the application reads `params()` and preset names and saves them
through `app.system.settings`.
"""

from __future__ import annotations

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

from app.views.chat.param_labels import param_label
from engine.errors import InvalidParamsError
from engine.types import PARAMS, SamplingParams, Slider

SEED_RANDOM = -1
SLIDERS = tuple((p.name, p.slider) for p in PARAMS if p.slider is not None)
# Controls a backend may ignore, by `SamplingParams` field; max tokens is always honoured.
OPTIONAL_PARAMS = (*(name for name, _ in SLIDERS), "seed", "stop")
# What a preset decides; the limits, stop strings and seed stay the user's (see application).
PRESET_FIELDS = tuple(name for name, _ in SLIDERS)
CUSTOM = ""  # the preset box's item data for "Custom"


class SliderField(QWidget):
    """A slider and a spin box showing one value; either one edits it."""

    sig_value_changed = Signal(float)

    def __init__(self, name: str, spec: Slider, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.spec = spec
        self.slider = QSlider(Qt.Orientation.Horizontal, self)
        self.slider.setObjectName(f"slider_{name}")
        self.slider.setRange(0, round((spec.high - spec.low) / spec.step))
        self.spin: QDoubleSpinBox | QSpinBox
        if spec.decimals:
            self.spin = QDoubleSpinBox(self)
            self.spin.setDecimals(spec.decimals)
            self.spin.setSingleStep(spec.step)
        else:
            self.spin = QSpinBox(self)
        self.spin.setObjectName(f"spin_{name}")
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
        shown = round(value, self.spec.decimals) if self.spec.decimals else round(value)
        self.spin.setValue(shown)  # type: ignore[arg-type]  # a QSpinBox when decimals is 0

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
        self.fields = {name: SliderField(name, spec, self) for name, spec in SLIDERS}
        self._presets: dict[str, SamplingParams] = {}
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
        presets_row = QHBoxLayout()
        presets_row.addWidget(self.presets, 1)
        presets_row.addWidget(self.save_preset)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow(self.tr("Preset"), presets_row)
        for name, field in self.fields.items():
            form.addRow(self._label(name), field)
        form.addRow(param_label("max_new_tokens"), self.max_tokens)
        form.addRow(self._label("seed"), self.seed)
        form.addRow(self._label("stop"), self.stop)
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

    def _label(self, name: str) -> QLabel:
        self._labels[name] = QLabel(param_label(name), self)
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
        self._show_preset()

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

    def set_presets(self, presets: list[tuple[str, str, SamplingParams]], current: str) -> None:
        """``presets``: (key, shown label, params); ``current`` is the selected key. The box
        shows "Custom" instead while the sliders hold none of them."""
        self.presets.clear()
        self._presets = {key: params for key, _label, params in presets}
        for key, label, _params in presets:
            self.presets.addItem(label, key)
        self.presets.setCurrentIndex(max(self.presets.findData(current), 0))
        self._show_preset()

    def _show_preset(self) -> None:
        """Keep the selected preset if the sliders still hold it, else one they hold, else
        "Custom" (an extra item, removed once a preset is chosen again)."""
        chosen = self.presets.currentData()
        keys = [chosen, *self._presets] if chosen in self._presets else list(self._presets)
        key = next((k for k in keys if self._holds(self._presets[k])), CUSTOM)
        custom = self.presets.findData(CUSTOM)
        if key == CUSTOM and custom < 0 and self._presets:
            self.presets.addItem(self.tr("Custom"), CUSTOM)
        elif key != CUSTOM and custom >= 0:
            self.presets.removeItem(custom)
        self.presets.setCurrentIndex(max(self.presets.findData(key), 0))

    def _holds(self, preset: SamplingParams) -> bool:
        return all(getattr(preset, n) == getattr(self._params, n) for n in PRESET_FIELDS)

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
            self._show_preset()
            self.sig_params_changed.emit(params)

    def _read(self) -> SamplingParams:
        seed = self.seed.value()
        sliders = {
            name: round(field.value(), 4) if field.spec.decimals else int(field.value())
            for name, field in self.fields.items()
        }
        return self._params.replace(
            **sliders,
            max_new_tokens=self.max_tokens.value(),
            seed=None if seed == SEED_RANDOM else seed,
            stop=tuple(_parse_stop(self.stop.text())),
        )

    def _on_system_prompt_changed(self) -> None:
        self.sig_system_prompt_changed.emit(self.system_prompt.toPlainText())

    def _on_presets_activated(self, index: int) -> None:
        key = self.presets.itemData(index)
        if key:  # not "Custom" (CUSTOM is "")
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
