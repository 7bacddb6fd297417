"""Shown names of the sampling parameters, translated.

Owns marking each `engine.params.PARAMS` label for translation: lupdate reads only `app/`, so
the English labels of the engine's table are repeated here inside ``QT_TRANSLATE_NOOP`` (a test
checks every row's label is). Does not own the labels' English text (the table does) or where
they are shown (the sampling panel, the message Details).
"""

from __future__ import annotations

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication

from engine.types import PARAM

CONTEXT = "SamplingParams"
MARKED = (
    QT_TRANSLATE_NOOP("SamplingParams", "Temperature"),
    QT_TRANSLATE_NOOP("SamplingParams", "Top-k"),
    QT_TRANSLATE_NOOP("SamplingParams", "Top-p"),
    QT_TRANSLATE_NOOP("SamplingParams", "Min-p"),
    QT_TRANSLATE_NOOP("SamplingParams", "Repetition penalty"),
    QT_TRANSLATE_NOOP("SamplingParams", "Presence penalty"),
    QT_TRANSLATE_NOOP("SamplingParams", "Frequency penalty"),
    QT_TRANSLATE_NOOP("SamplingParams", "Seed"),
    QT_TRANSLATE_NOOP("SamplingParams", "Max tokens"),
    QT_TRANSLATE_NOOP("SamplingParams", "Stop strings"),
    QT_TRANSLATE_NOOP("SamplingParams", "Beams"),
)


def param_label(name: str) -> str:
    """The translated label of the `SamplingParams` field ``name``; the field name if unknown
    (a record saved by a newer version)."""
    param = PARAM.get(name)
    return QCoreApplication.translate(CONTEXT, param.label) if param is not None else name
