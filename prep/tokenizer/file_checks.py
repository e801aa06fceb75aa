"""What a tokenizer.json from elsewhere must be before tokenmill encodes documents with it.

Read as `tokenizers` reads it (its canonical JSON, `Tokenizer.from_str(...).to_str()`), a file must have:

- no regular expression but tokenmill's own (prep/tokenizer/pretokenize.py) in its normalizer,
  pre-tokenizer or decoder: the `tokenizers` regex engine backtracks, and a Replace of "(a+)+$" made
  encoding a run of a's panic (a PanicException, which is not an Exception);
- every added token special, bos, eos and pad among them: the encoders match a non-special one in the
  text, so a document quoting "<|eos|>" got the eos id inside its body;
- a piece for every byte a text can hold (all 256 byte symbols of a byte-level vocabulary), or else an
  unknown token or byte fallback: the compiled encoder refuses to invent ids for a byte without one,
  which failed the shards job in a Spark task, and `tokenizers`' BPE drops such a byte silently;
- no BPE dropout: it draws merges at random, so the same documents made other shards every run;
- a WordPiece model's words of at most MAX_WORDPIECE_CHARS characters: its search is cubic in a word's
  length, and a file of 1e12 with no pre-tokenizer took 128 s for 16,000 letters (BERT's is 100);
- no more than MAX_INSERTED_CHARS characters that the Prepends and Replaces of its normalizer and
  pre-tokenizer put in the text together, and one Replace at most that lengthens what it replaces: every
  document carried a Prepend of 100,000 characters ("hello world" became 36,112 tokens), reading the file
  took 55 s with one of a million, and five chained Replaces of a space by 16 spaces made "hello world"
  1,048,588 tokens (Llama 2's and Mistral's put two characters, "▁" before the text and for each space).
"""

from prep.tokenizer.base import BOS, EOS, PAD
from prep.tokenizer.pretokenize import BYTE_SYMBOLS, CJK_RUN, DIGITS, LLAMA3, NEWLINES

# the CJK runs as tokenmill wrote them before its ranges were defined once (2026-11-29, prep/cjk.py): such a
# file encodes as it did, by `tokenizers`
CJK_RUN_BEFORE_2026_11_29 = r"[\u3040-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+"
OWN_PATTERNS = frozenset((DIGITS, CJK_RUN, CJK_RUN_BEFORE_2026_11_29, LLAMA3, NEWLINES))
BYTE_FALLBACK_PIECES = [f"<0x{b:02X}>" for b in range(256)]
MAX_WORDPIECE_CHARS = 200
MAX_INSERTED_CHARS = 16


def check_tokenizer(config: dict, path: str) -> None:
    """ValueError naming `path` for the first of the problems above in `config` (a tokenizer.json's JSON)."""
    problem = (_foreign_pattern(config) or _long_insert(config) or _added_token_problem(config)
               or _byte_problem(config))
    model = config["model"]
    if (model.get("dropout") or 0) > 0:
        problem = problem or "BPE dropout (random merges: other ids every run)"
    if model.get("type") == "WordPiece" and not model.get("max_input_chars_per_word", 0) <= MAX_WORDPIECE_CHARS:
        problem = problem or (f"a WordPiece of words up to {model.get('max_input_chars_per_word')} characters (at "
                              f"most {MAX_WORDPIECE_CHARS}: its search is cubic in a word's length)")
    if problem:
        raise ValueError(f"{path}: {problem}")


def _foreign_pattern(config: dict) -> str | None:
    for part in ("normalizer", "pre_tokenizer", "post_processor", "decoder"):
        for pattern in _regexes(config.get(part)):
            if pattern not in OWN_PATTERNS:
                return f"a regular expression tokenmill does not write in its {part} ({pattern[:40]!r})"
    return None


def _long_insert(config: dict) -> str | None:
    """What the normalizer and the pre-tokenizer put in the text, bounded as a whole: their Prepends' and
    Replaces' strings together, and one Replace at most that lengthens what it replaces (chained, five of a
    space by 16 spaces made "hello world" 1,048,588 tokens; 6,250 Prepends of 16 characters, 100,013)."""
    inserts = [(kind, text, pattern) for part in ("normalizer", "pre_tokenizer")
               for kind, text, pattern in _inserts(config.get(part))]
    if (total := sum(len(text) for _, text, _ in inserts)) > MAX_INSERTED_CHARS:
        return (f"Prepends and Replaces that put {total:,} characters in the text together ({inserts[0][1][:20]!r}"
                f"...; at most {MAX_INSERTED_CHARS}: every document carries them)")
    lengthening = [text for kind, text, pattern in inserts
                   if kind == "Replace" and len(text) > len(pattern if isinstance(pattern, str) else "")]
    if len(lengthening) > 1:
        return f"{len(lengthening)} Replaces that lengthen the text (at most one: chained, they multiply it)"
    return None


def _inserts(node) -> list[tuple[str, object, object]]:
    """(type, string, pattern) of each Prepend and Replace under `node`: what they put in the text, and for a
    Replace the text it replaces (its pattern's String; a Regex is checked apart, _foreign_pattern). Read
    as the library writes the file again: the strings are strings."""
    if isinstance(node, list):
        return [found for item in node for found in _inserts(item)]
    if not isinstance(node, dict):
        return []
    own = []
    if node.get("type") == "Prepend":
        own = [("Prepend", node.get("prepend"), None)]
    elif node.get("type") == "Replace":
        pattern = node.get("pattern")
        own = [("Replace", node.get("content"), pattern.get("String") if isinstance(pattern, dict) else None)]
    return own + [found for value in node.values() for found in _inserts(value)]


def _regexes(node) -> list[str]:
    if isinstance(node, list):
        return [p for item in node for p in _regexes(item)]
    if not isinstance(node, dict):
        return []
    own = [node["Regex"]] if isinstance(node.get("Regex"), str) else []
    return own + [p for value in node.values() for p in _regexes(value)]


def _added_token_problem(config: dict) -> str | None:
    added = config.get("added_tokens") or []
    if (plain := next((t for t in added if not t.get("special")), None)) is not None:
        return f"added token {plain.get('content')!r} is not special (text spelling it would become its id)"
    specials = {t.get("content") for t in added}
    if (missing := next((t for t in (BOS, EOS, PAD) if t not in specials), None)) is not None:
        return f"{missing} is not a special added token"
    return None


def _byte_problem(config: dict) -> str | None:
    model = config["model"]
    kind = model.get("type")
    pieces = {p for p, _ in model["vocab"]} if kind == "Unigram" else set(model.get("vocab") or {})
    if (kind == "Unigram" and model.get("unk_id") is not None) or model.get("unk_token") in pieces:
        return None
    if kind in ("WordLevel", "WordPiece"):
        return f"a {kind} model without an unknown token (a word outside its vocabulary cannot be encoded)"
    if model.get("byte_fallback") and pieces.issuperset(BYTE_FALLBACK_PIECES):
        return None
    if not _byte_level(config):
        return "no byte-level pre-tokenizer, unknown token or byte fallback (text outside its pieces cannot be encoded)"
    if (missing := next((b for b, symbol in enumerate(BYTE_SYMBOLS) if symbol not in pieces), None)) is not None:
        return f"byte 0x{missing:02x} has no piece, and there is no unknown token or byte fallback"
    return None


def _byte_level(config: dict) -> bool:
    """Whether text reaches the model as byte symbols (a ByteLevel normalizer or pre-tokenizer)."""
    def has(node) -> bool:
        if isinstance(node, list):
            return any(map(has, node))
        return isinstance(node, dict) and (node.get("type") == "ByteLevel" or any(map(has, node.values())))
    return has(config.get("normalizer")) or has(config.get("pre_tokenizer"))
