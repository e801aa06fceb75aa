"""A labelled set of prose and web junk, built from the real text of the sample corpus.

Prose: runs of four to ten consecutive sentence paragraphs from the documentation in the sample (the Debian
Administrator's Handbook, the Debian Reference, the Debian FAQ, the maintainers' guide, the Python
tutorial, HOWTOs and FAQ), the length of a short web article. Junk: the six kinds a web crawl
is full of, made from the same real words and lines: repeated-line spam, navigation menus, keyword
stuffing, symbol soup, lorem ipsum and number tables. Deterministic for a seed.

    python -m benchmarks.quality_set   # prints how many of each kind
"""

import random
import re
from dataclasses import dataclass

from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from prep.quality.text_units import TERMINAL_PUNCTUATION, cjk_fraction

SAMPLE = "data/sample"
# Documents whose id starts with one of these, or whose url contains one of the folders.
PROSE_SOURCES = {
    "en": ("debian-handbook.en", "debian-reference.en", "debian-faq.en", "/_sources/tutorial/",
           "/_sources/howto/", "/_sources/faq/"),
    "zh": ("debian-handbook.zh", "debian-reference.zh", "debian-faq", "maint-guide.zh"),
}
JUNK_KINDS = ("repeated_lines", "navigation_menu", "keyword_stuffing", "symbol_soup", "lorem_ipsum", "number_table")
LOREM = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et "
         "dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex "
         "ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu "
         "fugiat nulla pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt "
         "mollit anim id est laborum.")


@dataclass
class Labelled:
    text: str
    lang: str  # en or zh
    label: str  # "prose" or a junk kind
    origin: str  # the sample document it was made from


def _documents(lang: str) -> list[Document]:
    docs = []
    for file in expand_inputs(SAMPLE):
        for record in read_file(file):
            if isinstance(record, Document):
                in_lang = (cjk_fraction(record.text) > 0.3) == (lang == "zh")
                where = f"{record.id} {record.metadata or ''}"
                if in_lang and any(where.startswith(s) or (s.startswith("/") and s in where)
                                   for s in PROSE_SOURCES[lang]):
                    docs.append(record)
    return docs


def _is_sentence_paragraph(paragraph: str, lang: str) -> bool:
    text = " ".join(paragraph.split())
    long_enough = len(re.findall(r"[\u4e00-\u9fff]", text)) >= 25 if lang == "zh" else len(text.split()) >= 15
    return long_enough and text.endswith(TERMINAL_PUNCTUATION)


def prose_articles(docs: list[Document], lang: str, rng: random.Random) -> list[Labelled]:
    articles = []
    for doc in docs:
        run: list[str] = []
        for paragraph in re.split(r"\n\s*\n", doc.text) + [""]:
            if paragraph and _is_sentence_paragraph(paragraph, lang):
                run.append(" ".join(paragraph.split()) if lang == "en" else paragraph.strip())
                continue
            if len(run) >= 4:
                size = rng.randint(4, 10)
                articles.append(Labelled("\n\n".join(run[:size]), lang, "prose", doc.id))
            run = []
    return articles


CODE_CHARS = set("(){}[]=<>:#'\"`$%@|\\/;")


def _lines(docs, rng, count, short):
    """Real lines: short ones without code or sentence punctuation are headings, menu material."""
    pool = [line.strip() for d in docs for line in d.text.split("\n") if line.strip()]
    if short:
        pool = [line for line in pool if len(line) <= 40 and any(c.isalpha() for c in line)
                and not CODE_CHARS & set(line) and not line.endswith(TERMINAL_PUNCTUATION)]
    else:
        pool = [line for line in pool if len(line) > 40]
    return rng.sample(pool, min(count, len(pool)))


def _keywords(doc: Document, lang: str) -> list[str]:
    if lang == "zh":
        return re.findall(r"[\u4e00-\u9fff]{2,4}", doc.text)[:40] or ["软件包"]
    return [w for w in re.findall(r"[A-Za-z]{5,}", doc.text)][:40] or ["debian"]


def junk(docs: list[Document], lang: str, kind: str, rng: random.Random) -> Labelled:
    doc = rng.choice(docs)
    if kind == "repeated_lines":
        line = _lines([doc], rng, 1, short=False) or [doc.text[:120]]
        text = "\n".join(line * rng.randint(8, 40))
    elif kind == "navigation_menu":
        sep = rng.choice(["\n", " | ", " » ", " · "])
        text = sep.join(_lines(docs, rng, rng.randint(15, 60), short=True))
    elif kind == "keyword_stuffing":
        words = rng.sample(_keywords(doc, lang), min(6, len(_keywords(doc, lang))))
        joiner = "" if lang == "zh" else " "
        text = "\n".join(joiner.join(rng.choice(words) for _ in range(rng.randint(6, 14))) + rng.choice(["", ",", "!"])
                         for _ in range(rng.randint(8, 30)))
    elif kind == "symbol_soup":
        symbols = "#@$%^&*()[]{}<>~|\\/=+-_:;.,!?★☆●■◆→←"
        text = "\n".join("".join(rng.choice(symbols) for _ in range(rng.randint(20, 80))) + " " +
                         rng.choice(_keywords(doc, lang)) for _ in range(rng.randint(10, 40)))
    elif kind == "lorem_ipsum":
        sentences = re.split(r"(?<=\.) ", LOREM)
        text = "\n\n".join(" ".join(rng.sample(sentences, len(sentences))) for _ in range(rng.randint(3, 10)))
    elif kind == "number_table":
        cols = rng.randint(3, 8)
        text = "\n".join(" ".join(str(round(rng.uniform(0, 10 ** rng.randint(1, 6)), rng.randint(0, 2)))
                                  for _ in range(cols)) for _ in range(rng.randint(15, 60)))
    else:
        raise ValueError(kind)
    return Labelled(text, lang, kind, doc.id)


def build(seed: int = 0, per_kind: int = 40, max_prose: int = 400) -> list[Labelled]:
    rng = random.Random(seed)
    labelled = []
    for lang in ("en", "zh"):
        docs = _documents(lang)
        articles = prose_articles(docs, lang, rng)
        labelled += rng.sample(articles, min(max_prose, len(articles)))
        labelled += [junk(docs, lang, kind, rng) for kind in JUNK_KINDS for _ in range(per_kind)]
    return labelled


if __name__ == "__main__":
    from collections import Counter

    print(Counter((x.lang, x.label) for x in build()))
