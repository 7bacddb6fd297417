"""Keyword terms for FTS5, dense top-k over a vector matrix, and reciprocal rank fusion.

Owns how text becomes keyword terms: Latin words lower-cased, CJK runs as overlapping character
bigrams. The conversation search (`app.store.search`) uses FTS5's trigram tokenizer, which is
right for substring search but cannot match a two-character Chinese word, the most common
length; retrieval needs ranked *any-term* matching, so chunks are indexed as bigram terms under
FTS5's unicode61 tokenizer and ranked by bm25 (the approach of Lucene's CJK analyzer). Does not
own storage (`app.documents.index`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

RRF_K = 60  # the constant of Cormack et al. (2009); ranks past ~60 weigh little
MAX_QUERY_TERMS = 64

_TOKENS = re.compile(
    r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff]+"  # CJK ideograph runs
    r"|[\u3040-\u30ff\uac00-\ud7af]+"  # kana, hangul runs
    r"|[^\W_]+",  # other words (letters and digits)
)
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_STOPWORDS = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "has", "have", "how"}
    | {"in", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "was", "were"}
    | {"what", "when", "where", "which", "who", "whom", "why", "will", "with", "does", "did", "do"}
)
# Question words and particles: as bigrams ("什么") and lone characters ("的").
_CJK_STOP = frozenset(
    {"什么", "哪里", "多少", "怎么", "如何", "为什", "是什", "哪个", "哪些"}
    | set("的了是在和与及或吗呢谁几")
)


def terms(text: str) -> list[str]:
    """The keyword terms of ``text``: words, and bigrams of CJK runs (a lone character as is)."""
    out: list[str] = []
    for token in _TOKENS.findall(text.lower()):
        if _CJK_RUN.match(token):
            out += [token] if len(token) == 1 else [token[i : i + 2] for i in range(len(token) - 1)]
        else:
            out.append(token)
    return out


def index_terms(text: str) -> str:
    return " ".join(terms(text))


def match_expression(query: str) -> str | None:
    """An FTS5 OR-query of the distinct content terms of ``query`` (None when it has none)."""
    seen: dict[str, None] = {}
    for term in terms(query):
        if term in _STOPWORDS or term in _CJK_STOP or (len(term) == 1 and term.isascii()):
            continue
        seen.setdefault(term, None)
    chosen = list(seen)[:MAX_QUERY_TERMS]
    if not chosen:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in chosen)


def dense_top_k(matrix: np.ndarray, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Row indexes of the ``k`` highest dot products (vectors are L2-normalised: cosine)."""
    if matrix.shape[0] == 0 or k <= 0:
        return []
    scores = matrix @ query.astype(matrix.dtype)  # (N,)
    k = min(k, scores.shape[0])
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(int(i), float(scores[i])) for i in top]


def fuse(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: each id scores sum(1 / (k + rank)); best first."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda kv: -kv[1])
