"""The pre-tokenizer every tokenmill tokenizer shares (issue 4's first building block).

Lossless and byte-level: no normalizer touches the text; after splitting, each piece is mapped to
byte symbols, so every string has a spelling in the 256 byte symbols and decode(encode(x)) == x.
The splitting, in order:
  1. digits in groups of one to three (as DeepSeek-V3 and Llama 3 do): numbers get a small,
     regular vocabulary instead of one token per frequent number;
  2. runs of Chinese and Japanese characters isolated (as DeepSeek-V3 does), so a merge never spans
     a Han run and the Latin or punctuation around it;
  3. everything else split like Llama 3 (contractions, letters with one leading non-letter,
     punctuation runs, newlines, spaces).
"""

from tokenizers import Regex, decoders, pre_tokenizers

from prep.cjk import HAN_KANA, char_class

DIGITS = r"\p{N}{1,3}"
CJK_RUN = f"[{char_class(HAN_KANA)}]+"
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def pre_tokenizer() -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(DIGITS), behavior="isolated"),
        pre_tokenizers.Split(Regex(CJK_RUN), behavior="isolated"),
        pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])


def decoder() -> decoders.Decoder:
    return decoders.ByteLevel()


def byte_alphabet() -> list[str]:
    """The 256 byte symbols: all of them go into every vocabulary, so nothing is ever unknown."""
    return pre_tokenizers.ByteLevel.alphabet()


def pre_tokens(text: str) -> list[str]:
    """The pre-tokens of a text, as byte-symbol strings (what a tokenizer model sees)."""
    return [piece for piece, _ in pre_tokenizer().pre_tokenize_str(text)]
