"""The pre-tokenizer every tokenmill tokenizer shares.

Lossless and byte-level: no normalizer touches the text; after splitting, each piece is mapped to
byte symbols, so every string has a spelling in the 256 byte symbols and decode(encode(x)) == x.
The splitting, in order:
  1. digits in groups of one to three (as DeepSeek-V3 and Llama 3 do): numbers get a small,
     regular vocabulary instead of one token per frequent number;
  2. runs of Chinese and Japanese characters isolated (as DeepSeek-V3 does), so a merge never spans
     a Han run and the Latin or punctuation around it;
  3. everything else split like Llama 3 (contractions, letters with one leading non-letter,
     punctuation runs, newlines, spaces).

With superwords (prep/tokenizer/superwords.py) stage 3 splits only at runs of newlines: a pre-token
is the rest of a line between digit groups and CJK runs, so pieces may span the spaces between words.
"""

from tokenizers import Regex, decoders, pre_tokenizers

from prep.cjk import HAN_KANA, char_class

DIGITS = r"\p{N}{1,3}"
CJK_RUN = f"[{char_class(HAN_KANA)}]+"
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")
NEWLINES = r"[\r\n]+"


# The trainers' time grows with the square of a pre-token's length (one 640 KB run of letters: 142 s; a
# 320 KB line under the superword pre-tokenizer: minutes). While training, a pre-token longer than this is
# cut into chunks of it: far past any word or line of text (the embedded sample trains to the same
# tokenizer, byte for byte, as without the cut; 128 bytes had cut runs of dashes and changed 103 ids), so
# only a run that long pays, a chunk at a time, losing the one pair across each cut.
TRAINING_CHUNK_BYTES = 1 << 14


def _stages(superwords: bool) -> list[pre_tokenizers.PreTokenizer]:
    return [
        pre_tokenizers.Split(Regex(DIGITS), behavior="isolated"),
        pre_tokenizers.Split(Regex(CJK_RUN), behavior="isolated"),
        pre_tokenizers.Split(Regex(NEWLINES if superwords else LLAMA3), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ]


def pre_tokenizer(superwords: bool = False) -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.Sequence(_stages(superwords))


def training_pre_tokenizer(superwords: bool) -> pre_tokenizers.PreTokenizer:
    """pre_tokenizer() with every pre-token cut into chunks of at most TRAINING_CHUNK_BYTES (in byte symbols,
    one per byte), for the trainers only: a trained tokenizer keeps pre_tokenizer()."""
    chunks = pre_tokenizers.Split(Regex(f"[\\s\\S]{{1,{TRAINING_CHUNK_BYTES}}}"), behavior="isolated")
    return pre_tokenizers.Sequence([*_stages(superwords), chunks])


def decoder() -> decoders.Decoder:
    return decoders.ByteLevel()


def byte_alphabet() -> list[str]:
    """The 256 byte symbols in byte order: all of them go into every vocabulary, so nothing is ever
    unknown. Not `ByteLevel.alphabet()`: it comes from a Rust hash set, in a new order in every
    process, and the Unigram stage numbers its pieces in the order it is given them."""
    return list(BYTE_SYMBOLS)


def pre_tokens(text: str, superwords: bool = False) -> list[str]:
    """The pre-tokens of a text, as byte-symbol strings (what a tokenizer model sees)."""
    return [piece for piece, _ in pre_tokenizer(superwords).pre_tokenize_str(text)]


def _byte_symbols() -> list[str]:
    """GPT-2's byte-to-symbol table (what ByteLevel uses): printable bytes stand for themselves, the
    others are shifted past U+0100 so no symbol is whitespace or a control character."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    symbols, shifted = {}, 0
    for byte in range(256):
        if byte in printable:
            symbols[byte] = chr(byte)
        else:
            symbols[byte] = chr(256 + shifted)
            shifted += 1
    return [symbols[b] for b in range(256)]


BYTE_SYMBOLS = _byte_symbols()
_SYMBOL_BYTES = {symbol: byte for byte, symbol in enumerate(BYTE_SYMBOLS)}


def to_symbols(text: str) -> str:
    """A text spelled in byte symbols, as the models see it."""
    return "".join(BYTE_SYMBOLS[b] for b in text.encode("utf-8"))


def from_symbols(symbols: str) -> bytes:
    return bytes(_SYMBOL_BYTES[s] for s in symbols)


def is_byte_symbols(piece: str) -> bool:
    return all(c in _SYMBOL_BYTES for c in piece)


def piece_bytes(piece: str) -> bytes:
    """A vocabulary entry's bytes: byte symbols map back one to one; anything else (a special token,
    another library's piece) is taken as UTF-8."""
    if is_byte_symbols(piece):
        return from_symbols(piece)
    return piece.encode("utf-8")
