"""What the cleaning transform gave before it was made fast, to hold every later version to it.

The corpora: the sample, the labelled prose-and-junk sets (two seeds), and the sample's documents
made hostile (mojibake from UTF-8 read as cp1252 and Latin-1, e-mail and IP addresses, control
characters and terminal escapes, CRLF and exotic spaces, shouting capitals, long lines, the fuzz
strings); each cleaned under the web, docs and code profiles. Per document the reason, language,
score (to 6 places) and a digest of the output text are recorded in clean_reference.json.zst,
written once by the transform of commit 4eb6362 (`python -m tests.prep.clean_reference --write`).
"""

import argparse
import base64
import hashlib
import json
import random
from pathlib import Path

import zstandard

from prep.clean import CleanConfig, clean_text
from prep.config import override
from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from tests.conftest import SAMPLE
from tests.fuzz_text import fuzz_strings, hostile_strings
from tests.labelled.quality_set import build

REFERENCE = Path(__file__).with_name("clean_reference.json.zst")
PROFILES = ("web", "docs", "code")


def sample_texts() -> list[str]:
    return [r.text for f in expand_inputs(str(SAMPLE)) for r in read_file(f) if isinstance(r, Document)]


def _made_hostile(text: str, rng: random.Random) -> str:
    kind = rng.randrange(8)
    if kind == 0:
        return text.encode("utf-8").decode("cp1252", errors="replace")
    if kind == 1:
        return text.encode("utf-8").decode("latin-1")
    paragraphs = text.split("\n\n")
    at = rng.randrange(len(paragraphs))
    extra = ["write to jane.doe+list@mail.example.org or root@debian.org",
             "the server at 8.8.8.8 and 192.168.1.20, also 2001:4860:4860::8888 and ::1, version 1.2.3.4.5",
             "\x00\x07 bell \x1b[1;31mred\x1b[0m \x85 next-line \ufeff bom",
             "line\r\nwith\rreturns\u00a0and\u2003spaces\u3000here  \t ",
             "THIS PARAGRAPH IS WRITTEN IN CAPITALS FROM START TO END, AS SOME PAGES ARE.",
             "x" * 1200 + " one very long word"][kind - 2]
    paragraphs.insert(at, extra)
    return "\n\n".join(paragraphs)


def corpora() -> dict[str, list[str]]:
    sample, rng = sample_texts(), random.Random(0)
    hostile = [_made_hostile(t, rng) for t in rng.sample(sample, 600)]
    hostile += list(fuzz_strings(0)) + hostile_strings(200, 0)
    labelled = [x.text for seed in (0, 1) for x in build(seed)]
    return {"sample": sample, "labelled": labelled, "hostile": hostile}


def _digest(text: str) -> str:
    return base64.b64encode(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6).digest()).decode()


def outcomes(texts: list[str], profile: str) -> list[list]:
    cfg = override(CleanConfig(), {"profile": profile})
    results = []
    for text in texts:
        c = clean_text(text, cfg)
        results.append([c.reason, c.lang, round(c.lang_score, 6), _digest(c.text)])
    return results


def everything() -> dict[str, list[list]]:
    return {f"{name}/{profile}": outcomes(texts, profile)
            for name, texts in corpora().items() for profile in PROFILES}


def read_reference() -> dict[str, list[list]]:
    return json.loads(zstandard.ZstdDecompressor().decompress(REFERENCE.read_bytes()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="record today's transform as the reference")
    if parser.parse_args().write:
        REFERENCE.write_bytes(zstandard.ZstdCompressor(level=19).compress(json.dumps(everything()).encode()))
        print(f"wrote {REFERENCE}")


if __name__ == "__main__":
    main()
