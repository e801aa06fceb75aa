"""A labelled set for quality classifiers, English and Chinese, built from real text: the good is prose and
documentation (the sample's articles, tests/labelled/quality_set.py, and with `web_pages`, the main text of
trafilatura's evaluation pages: news and blogs in a dozen languages); the junk is web junk made the way spam
looks (quality_set's six kinds, and listings, page chrome, Chinese SEO spam) and the hard cases rules miss,
each made from the good text itself:

- word_salad: every sentence replaced by as many words drawn from the good text's own vocabulary, its
  paragraphs, capitals and full stops kept;
- shuffled_across: each sentence replaced by a sentence of another document, the layout kept (spun content);
- shuffled_within: a document's own sentences shuffled, the layout kept;
- keyword_stuffed: a real paragraph with a phrase of it repeated after every sentence or two;
- machine_boilerplate: sentences from templates, filled with the good text's words and numbers.

Every item keeps the document it was made from (`origin`): a split by a hash of it keeps a document and
everything made from it on one side. Deterministic for a seed.
"""

import random
import re
import zlib
from dataclasses import dataclass

from tests.labelled.quality_set import JUNK_KINDS, _documents, junk, prose_articles

HARD_KINDS = ("word_salad", "shuffled_across", "shuffled_within", "keyword_stuffed", "machine_boilerplate")
SPAM_KINDS = JUNK_KINDS + ("listing", "page_chrome", "seo_spam")
SENTENCE = {"en": re.compile(r"(?<=[.!?])\s+(?=\S)"), "zh": re.compile(r"(?<=[。！？])")}
TEMPLATES = {
    "en": ["{A} is a {b} {c} that was last updated on {d}.", "For more information about {a}, see the {b} page.",
           "There are {n} results for {a} in {b}.", "{A} ({n}) is listed under {b} and {c}.",
           "This page describes {a} as it relates to {b}.", "Click here to learn more about {a} and {b}."],
    "zh": ["{a}是一个关于{b}的{c}，最后更新于{d}。", "更多关于{a}的信息，请参见{b}页面。", "共有{n}条关于{a}的结果。",
           "{a}（{n}）属于{b}和{c}分类。", "点击这里了解更多关于{a}和{b}的内容。"]}


@dataclass
class Labelled:
    text: str
    lang: str  # en, zh, or another language of the web pages
    kind: str  # "prose", "web_page" (good) or a junk kind
    origin: str  # the document it was made from

    @property
    def good(self) -> bool:
        return self.kind in ("prose", "web_page")


def held_out(origin: str, share: float = 0.2) -> bool:
    """Whether an item is in the held-out part: by a hash of its origin."""
    return zlib.crc32(origin.encode()) % 1000 < share * 1000


def paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def sentences(paragraph: str, lang: str) -> list[str]:
    return [s for s in SENTENCE["zh" if lang == "zh" else "en"].split(paragraph) if s.strip()]


def _join(parts: list[str], lang: str) -> str:
    return ("" if lang == "zh" else " ").join(parts)


def _words(text: str, lang: str) -> list[str]:
    return [c for c in text if not c.isspace()] if lang == "zh" else text.split()


def hard(kind: str, doc: Labelled, pool: list[Labelled], rng: random.Random) -> str:
    lang, layout = doc.lang, [sentences(p, doc.lang) for p in paragraphs(doc.text)]
    if kind == "word_salad":
        vocabulary = _words(rng.choice(pool).text + rng.choice(pool).text, lang)

        def salad(sentence: str) -> str:
            words = [rng.choice(vocabulary) for _ in range(max(4, len(_words(sentence, lang))))]
            if lang != "zh":
                words[0] = words[0].capitalize()
            return _join(words, lang).rstrip(".!?。！？") + ("。" if lang == "zh" else ".")

        return "\n\n".join(_join([salad(s) for s in p], lang) for p in layout)
    if kind == "shuffled_across":
        others = [s for other in rng.sample(pool, min(30, len(pool))) for p in paragraphs(other.text)
                  for s in sentences(p, lang)]
        return "\n\n".join(_join([rng.choice(others) for _ in p], lang) for p in layout)
    if kind == "shuffled_within":
        flat = [s for p in layout for s in p]
        rng.shuffle(flat)
        it = iter(flat)
        return "\n\n".join(_join([next(it) for _ in p], lang) for p in layout)
    if kind == "keyword_stuffed":
        words = _words(doc.text, lang)
        at = rng.randrange(max(1, len(words) - 4))
        phrase = _join(words[at:at + rng.randint(2, 4)], lang).strip(".,;:!?。，；：！？")
        return "\n\n".join(_join([s + ("" if lang == "zh" else " ") + phrase + ("。" if lang == "zh" else ".")
                                  if k % rng.randint(1, 2) == 0 else s for k, s in enumerate(p)], lang)
                           for p in layout)
    if kind == "machine_boilerplate":
        words = [w.strip(".,;:!?()") for w in _words(doc.text, lang) if len(w.strip(".,;:!?()")) > (0 if lang == "zh"
                                                                                                     else 3)]
        pick = (lambda: "".join(rng.choice(words) for _ in range(2))) if lang == "zh" else (lambda: rng.choice(words))

        def line():
            a = pick()
            return rng.choice(TEMPLATES[lang]).format(a=a, A=a.capitalize(), b=pick(), c=pick(), n=rng.randint(2, 999),
                                                      d=f"{rng.randint(2001, 2025)}-{rng.randint(1, 12):02d}")

        return "\n\n".join(_join([line() for _ in p], lang) for p in layout)
    raise ValueError(kind)


def spam(kind: str, lang: str, docs, rng: random.Random) -> tuple[str, str]:
    """(text, origin) of a kind of web spam."""
    if kind in JUNK_KINDS:
        made = junk(docs, lang, kind, rng)
        return made.text, made.origin
    doc = rng.choice(docs)
    words = [w for w in re.findall(r"[\u4e00-\u9fff]{2,4}" if lang == "zh" else r"[A-Za-z]{4,}", doc.text)] or ["x"]
    if kind == "listing":
        stock = ["In stock", "Sold out", "有货"]
        text = "\n".join(f"{rng.choice(words).title()} {rng.choice(words)} {rng.choice(['$', '€', '¥'])}"
                         f"{rng.randint(1, 999)}.{rng.randint(0, 99):02d} {rng.choice(stock)}"
                         for _ in range(rng.randint(10, 40)))
    elif kind == "page_chrome":
        site = rng.choice(words).title()
        menu = " | ".join(rng.choice(words).title() for _ in range(rng.randint(4, 9)))
        text = "\n".join([menu, f"Home > {rng.choice(words)} > {rng.choice(words)}",
                          "We use cookies to improve your experience. By continuing you accept our Privacy Policy.",
                          f"Subscribe to the {site} newsletter", menu,
                          f"© {rng.randint(2010, 2026)} {site}. All rights reserved.", "Terms | Privacy | Contact"])
    elif kind == "seo_spam":
        key = rng.choice(words)
        text = "\n".join(f"【{key}】{key}{rng.choice(words)}免费下载 {key}最新版 官方网站 {key}在线观看 "
                         f"联系电话：1{rng.randint(30, 89)}{rng.randint(10000000, 99999999)}"
                         for _ in range(rng.randint(5, 20)))
    else:
        raise ValueError(kind)
    return text, doc.id


def build(seed: int = 0, per_kind: int = 120, max_prose: int = 600, web_pages: list[tuple[str, str]] = ()
          ) -> list[Labelled]:
    """The labelled items; `web_pages`: (text, language) of pages' main text, good too (their own origin)."""
    rng = random.Random(seed)
    items: list[Labelled] = []
    for lang in ("en", "zh"):
        docs = _documents(lang)
        articles = prose_articles(docs, lang, rng)
        good = [Labelled(a.text, lang, "prose", a.origin) for a in rng.sample(articles, min(max_prose, len(articles)))]
        items += good
        for kind in HARD_KINDS:
            for _ in range(per_kind):
                doc = rng.choice(good)
                items.append(Labelled(hard(kind, doc, good, rng), lang, kind, doc.origin))
        for kind in SPAM_KINDS:
            for _ in range(per_kind // 3):
                text, origin = spam(kind, lang, docs, rng)
                items.append(Labelled(text, lang, kind, origin))
    items += [Labelled(text, lang, "web_page", f"web:{k}") for k, (text, lang) in enumerate(web_pages)]
    return items


if __name__ == "__main__":
    from collections import Counter

    print(Counter((x.lang, x.kind) for x in build()))
