"""A labelled near-duplicate set built from real documents of the sample corpus, with exact Jaccard
similarities of their shingle sets as ground truth.

Originals are English and Chinese sections of the Debian documentation. A share of them get edited
copies of the kinds a web crawl is full of: reposts with boilerplate added (menus, footers),
reflowed text (line breaks and spacing changed), changed sentences (one to three sentences replaced
by sentences of other documents) and partial copies (the first 60-95%). Deterministic for a seed.
"""

import random
import re
from dataclasses import dataclass
from itertools import combinations

from prep.dedup.shingles import shingles
from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file

SOURCES = ("debian-handbook.en", "debian-reference.en", "debian-handbook.zh", "debian-reference.zh")
EDITS = ("repost", "reflow", "changed_sentences", "partial")
BOILERPLATE = {
    "en": ["Home | Download | Documentation | Support | Contact", "Share this page: Facebook Twitter Email",
           "Copyright 2024. All rights reserved. Privacy policy.", "Posted by admin. 3 comments."],
    "zh": ["首页 | 下载 | 文档 | 支持 | 联系我们", "分享到：微博 微信 QQ空间", "版权所有 © 2024 保留所有权利。",
           "发布者：管理员 评论（3）"],
}


@dataclass
class LabelledDoc:
    id: str
    text: str
    lang: str
    family: str  # the original it comes from (itself for an original)
    edit: str  # "original" or one of EDITS


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?。！？])\s*", text) if s.strip()]


def _edit(doc: LabelledDoc, kind: str, others: list[str], rng: random.Random) -> str:
    text = doc.text
    if kind == "repost":
        lines = BOILERPLATE[doc.lang]
        return f"{rng.choice(lines)}\n\n{text}\n\n{rng.choice(lines)}"
    if kind == "reflow":
        return re.sub(r"\s+", lambda _: rng.choice([" ", "\n", "  ", " \n"]), text)
    if kind == "changed_sentences":
        sentences = _sentences(text)
        for _ in range(rng.randint(1, 3)):
            sentences[rng.randrange(len(sentences))] = rng.choice(_sentences(rng.choice(others)))
        return (" " if doc.lang == "en" else "").join(sentences)
    if kind == "partial":
        return text[: int(len(text) * rng.uniform(0.6, 0.95))]
    raise ValueError(kind)


def build(seed: int = 0, per_source: int = 60, edited_share: float = 0.5) -> list[LabelledDoc]:
    rng = random.Random(seed)
    originals = []
    for file in expand_inputs("data/sample"):
        source = next((s for s in SOURCES if file.relative.startswith(s)), None)
        if not source:
            continue
        docs = [r for r in read_file(file) if isinstance(r, Document) and 1500 < len(r.text) < 8000]
        lang = source.rsplit(".", 1)[1]
        chosen = rng.sample(docs, min(per_source, len(docs)))
        originals += [LabelledDoc(d.id, d.text, lang, d.id, "original") for d in chosen]
    labelled = list(originals)
    texts = [d.text for d in originals]
    for doc in originals:
        if rng.random() < edited_share:
            for kind in rng.sample(EDITS, rng.randint(1, 2)):
                labelled.append(LabelledDoc(f"{doc.id}~{kind}", _edit(doc, kind, texts, rng), doc.lang, doc.id, kind))
    return labelled


def jaccard_pairs(docs: list[LabelledDoc], ngram: int = 5, floor: float = 0.3) -> dict[tuple[str, str], float]:
    """Exact Jaccard similarity of shingle sets for every pair at or above `floor`.

    Every pair, across languages too: some pages of the Chinese handbook are still in English.
    """
    sets = {d.id: set(shingles(d.text, ngram)) for d in docs}
    result = {}
    for a, b in combinations(sets, 2):
        sa, sb = sets[a], sets[b]
        inter = len(sa & sb)
        if inter:
            j = inter / (len(sa) + len(sb) - inter)
            if j >= floor:
                result[(a, b)] = j
    return result
