"""Installs Qt translators for the user's locale.

Owns finding `assets/i18n/hearth_<locale>.qm` (e.g. hearth_zh_CN.qm) and Qt's own translations
(qtbase_*) and installing them before any widget is built. Every UI string elsewhere goes
through ``self.tr`` / ``QCoreApplication.translate``, so adding a language needs no code.
Traditional Chinese readers (Taiwan, Hong Kong, Macau, or any ``zh-Hant`` locale) get the zh_TW
files, which ``make i18n`` generates from zh_CN (`packaging/i18n_traditional.py`).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QCoreApplication, QLibraryInfo, QLocale, QTranslator

I18N_DIR = Path(__file__).resolve().parents[2] / "assets" / "i18n"


def install_translators(app: QCoreApplication, locale: QLocale | None = None) -> list[QTranslator]:
    """Load Hearth's and Qt's translations for ``locale`` (default: the system's).

    Returns the installed translators (keep them alive as long as the app runs).
    """
    locale = ui_locale(locale or QLocale.system())
    installed: list[QTranslator] = []
    qt_dir = QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)
    for name, folder in (("qtbase", qt_dir), ("hearth", str(I18N_DIR))):
        translator = QTranslator(app)
        if translator.load(locale, name, "_", folder):
            app.installTranslator(translator)
            installed.append(translator)
    return installed


_TRADITIONAL_TERRITORIES = {
    QLocale.Country.Taiwan,
    QLocale.Country.HongKong,
    QLocale.Country.Macao,
}


def ui_locale(locale: QLocale) -> QLocale:
    """The locale whose files Hearth loads for ``locale``: zh_TW for every Traditional Chinese
    locale (there is one Traditional UI, as there is one Simplified one), else ``locale``."""
    if locale.language() != QLocale.Language.Chinese:
        return locale
    traditional = locale.script() == QLocale.Script.TraditionalHanScript
    if traditional or locale.territory() in _TRADITIONAL_TERRITORIES:
        return QLocale(QLocale.Language.Chinese, QLocale.Country.Taiwan)
    return locale
