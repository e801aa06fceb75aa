"""fastText's `predict` (k = 1) for a quantized supervised model with a hierarchical softmax, as
lid.176.ftz is: the same label and the same score, compiled, over a batch of texts in one call.

fastText's own predict spends a third of its time in `Dictionary::pushHash`, two lookups in a
`std::unordered_map` for each of the ~6,000 character n-grams of a 2,000-character text (the
quantized model keeps 42,765 of its 2 M n-gram buckets), and much of the rest making a
`std::string` per n-gram; here the buckets are one dense table, the n-gram hashes are extended a
byte at a time and the rows are added as they are found. Every step follows fastText 0.9.2's source
(dictionary.cc, quantmatrix.cc, productquantizer.cc, loss.cc) in the same float32/float64 order, so
the sums round the same way; tests/prep/test_fasttext_predict.py checks labels and scores against
fastText's binding on every text of the sample and the labelled sets.

The model file is parsed with its sizes checked; a model of another shape (another loss, not
quantized, word n-grams) is refused with ValueError and the caller uses fastText itself.
"""

import math
import struct
from dataclasses import dataclass

import numpy as np

from prep.compiled import kernel

MAGIC, MAX_VERSION = 793712314, 12
LOSS_HS, MODEL_SUPERVISED = 1, 3
LABEL_PREFIX = b"__label__"
EOS = b"</s>"
EOS_BYTES, LABEL_BYTES = np.frombuffer(EOS, np.uint8), np.frombuffer(LABEL_PREFIX, np.uint8)  # for the kernel


@dataclass(frozen=True)
class QuantizedModel:
    labels: list[str]  # without "__label__", in the model's order (a prediction's index)
    minn: int
    maxn: int
    bucket: int
    word_bytes: np.ndarray  # uint8: the vocabulary's words one after another
    word_starts: np.ndarray  # int64 [size + 1]
    word_is_label: np.ndarray  # bool [size]
    word_table: np.ndarray  # int32: fastText's word2int, open addressing of size ceil(size / 0.7)
    bucket_rows: np.ndarray  # int32 [bucket]: the input row of an n-gram bucket (nwords + pruned index), or -1
    codes: np.ndarray  # uint8 [rows, nsubq]: the product quantizer's code of each input row
    centroids: np.ndarray  # float32 [nsubq, 256, dsub]
    norm_codes: np.ndarray  # uint8 [rows]
    norms: np.ndarray  # float32 [256]: the norm quantizer's centroids
    output: np.ndarray  # float32 [labels - 1, dim]: the tree's inner nodes
    left: np.ndarray  # int32 [2 * labels - 1]: the Huffman tree, -1 at leaves
    right: np.ndarray


class _Reader:
    def __init__(self, data: bytes, path: str):
        self.data, self.at, self.path = data, 0, path

    def take(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.data):
            raise ValueError(f"{self.path}: truncated fastText model (at byte {self.at})")
        values = struct.unpack_from(fmt, self.data, self.at)
        self.at += size
        return values

    def array(self, dtype, count: int) -> np.ndarray:
        size = np.dtype(dtype).itemsize * count
        if count < 0 or self.at + size > len(self.data):
            raise ValueError(f"{self.path}: truncated fastText model (at byte {self.at})")
        values = np.frombuffer(self.data, dtype, count, self.at)
        self.at += size
        return values

    def word(self) -> bytes:
        end = self.data.find(b"\0", self.at)
        if end < 0:
            raise ValueError(f"{self.path}: truncated fastText model (a word without its end)")
        word, self.at = self.data[self.at:end], end + 1
        return word


def _require(ok: bool, path: str, what: str) -> None:
    if not ok:
        raise ValueError(f"{path}: {what}")


def _product_quantizer(r: _Reader, dim: int) -> tuple[np.ndarray, int, int]:
    """(centroids [nsubq, 256, dsub], nsubq, dsub) of a quantizer whose sub-vectors are all one size."""
    pq_dim, nsubq, dsub, lastdsub = r.take("<4i")
    _require(pq_dim == dim and dsub > 0 and nsubq * dsub == dim and lastdsub == dsub, r.path,
             f"unsupported product quantizer (dim {pq_dim}, {nsubq} x {dsub}, last {lastdsub})")
    return r.array(np.float32, dim * 256).reshape(nsubq, 256, dsub), nsubq, dsub


def _huffman_tree(counts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """fastText's HierarchicalSoftmaxLoss::buildTree: (left, right) children, -1 at the leaves."""
    labels = len(counts)
    count = counts + [10**15] * (labels - 1)
    left, right = np.full(2 * labels - 1, -1, np.int32), np.full(2 * labels - 1, -1, np.int32)
    leaf, node = labels - 1, labels
    for i in range(labels, 2 * labels - 1):
        smallest = []
        for _ in range(2):
            if leaf >= 0 and count[leaf] < count[node]:
                smallest.append(leaf)
                leaf -= 1
            else:
                smallest.append(node)
                node += 1
        left[i], right[i] = smallest
        count[i] = count[smallest[0]] + count[smallest[1]]
    return left, right


def load(path: str) -> QuantizedModel:
    with open(path, "rb") as f:
        r = _Reader(f.read(), path)
    magic, version = r.take("<2i")
    _require(magic == MAGIC and 0 < version <= MAX_VERSION, path, "not a fastText model")
    dim, _ws, _epoch, _min_count, _neg, word_ngrams, loss, model, bucket, minn, maxn, _lr_update = r.take("<12i")
    r.take("<d")
    _require(model == MODEL_SUPERVISED and loss == LOSS_HS and word_ngrams <= 1 and 0 < minn <= maxn
             and bucket > 0 and 0 < dim <= 1024, path,
             f"unsupported fastText model (model {model}, loss {loss}, word n-grams {word_ngrams}, "
             f"n-grams {minn}-{maxn})")
    size, nwords, nlabels = r.take("<3i")
    _ntokens, pruned = r.take("<2q")
    _require(0 < nwords and 1 < nlabels and size == nwords + nlabels and 0 < pruned <= bucket, path,
             f"bad dictionary sizes ({size} entries, {nwords} words, {nlabels} labels, {pruned} buckets)")
    words, counts, is_label = [], [], []
    for _ in range(size):
        words.append(r.word())
        count, kind = r.take("<qb")
        counts.append(count)
        is_label.append(kind == 1)
    _require(not any(is_label[:nwords]) and all(is_label[nwords:]), path, "labels must follow the words")
    _require(all(w.startswith(LABEL_PREFIX) for w in words[nwords:]), path, "a label without __label__")
    pairs = r.array(np.int32, 2 * pruned).reshape(-1, 2)
    rows = nwords + pruned
    _require(bool((pairs[:, 0] >= 0).all() and (pairs[:, 0] < bucket).all() and (pairs[:, 1] >= 0).all()
                  and (pairs[:, 1] < pruned).all()), path, "pruned bucket index out of range")
    bucket_rows = np.full(bucket, -1, np.int32)
    bucket_rows[pairs[:, 0]] = nwords + pairs[:, 1]
    (quantized,) = r.take("<?")
    _require(quantized, path, "not a quantized model (.ftz)")
    qnorm, m, n, codesize = r.take("<?2qi")
    _require(qnorm and m == rows and n == dim, path, f"input matrix {m} x {n}, expected {rows} x {dim} with norms")
    codes = r.array(np.uint8, codesize)
    centroids, nsubq, _dsub = _product_quantizer(r, dim)
    _require(codesize == rows * nsubq, path, f"{codesize} codes for {rows} rows of {nsubq}")
    norm_codes = r.array(np.uint8, rows)
    norms, _, _ = _product_quantizer(r, 1)
    (qout,) = r.take("<?")
    _require(not qout, path, "a quantized output matrix is not supported")
    out_rows, out_dim = r.take("<2q")
    _require(out_rows == nlabels and out_dim == dim, path, f"output matrix {out_rows} x {out_dim}")
    output = r.array(np.float32, out_rows * out_dim).reshape(out_rows, out_dim)
    _require(r.at == len(r.data), path, f"{len(r.data) - r.at} bytes after the model")

    word_starts = np.zeros(size + 1, np.int64)
    np.cumsum([len(w) for w in words], out=word_starts[1:])
    word_bytes = np.frombuffer(b"".join(words), np.uint8)
    table = word_table(word_bytes, word_starts, math.ceil(size / 0.7), path)
    left, right = _huffman_tree(counts[nwords:])
    return QuantizedModel(
        labels=[w[len(LABEL_PREFIX):].decode("utf-8") for w in words[nwords:]], minn=minn,
        maxn=maxn, bucket=bucket, word_bytes=word_bytes, word_starts=word_starts,
        word_is_label=np.array(is_label), word_table=table, bucket_rows=bucket_rows,
        codes=codes.reshape(rows, nsubq), centroids=np.ascontiguousarray(centroids), norm_codes=norm_codes,
        norms=np.ascontiguousarray(norms[0, :, 0]), output=output, left=left, right=right)


def predict_all(model: QuantizedModel, lines: list[str], threshold: float = 0.0) -> list[tuple[float, str] | None]:
    """fastText's predict(line, k=1, threshold) for each line (each ending in "\\n", as its binding
    wants): (probability, label), or None where fastText gives no prediction."""
    data = [line.encode("utf-8") for line in lines]  # strict, as the binding's conversion
    starts = np.zeros(len(data) + 1, np.int64)
    np.cumsum([len(d) for d in data], out=starts[1:])
    labels, scores = _predict_all(
        np.frombuffer(b"".join(data), np.uint8), starts, model.minn, model.maxn, model.bucket,
        model.word_bytes, model.word_starts, model.word_is_label, model.word_table, model.bucket_rows, model.codes,
        model.centroids, model.norm_codes, model.norms, model.output, model.left, model.right, np.float32(threshold))
    return [(float(s), model.labels[i]) if i >= 0 else None for i, s in zip(labels.tolist(), scores.tolist())]


@kernel
def _fnv_byte(h, b):
    """One byte of fastText's 32-bit FNV-1a, which reads bytes as signed chars (numba computes in 64
    bits: the mask keeps the 32)."""
    signed = np.uint64(b) | np.uint64(0xFFFFFF00) if b >= 0x80 else np.uint64(b)
    return ((h ^ signed) * np.uint64(16777619)) & np.uint64(0xFFFFFFFF)


@kernel
def _starts_with(data, start, prefix):
    """Whether data[start:] begins with prefix (data long enough)."""
    for k in range(len(prefix)):
        if data[start + k] != prefix[k]:
            return False
    return True


@kernel
def _slot(word_bytes, word_starts, table, data, start, length):
    """Dictionary::find: the slot of the word data[start:start + length] in fastText's open-addressing
    table (its word's index there, or -1 where the word is not in the vocabulary)."""
    return _probe(word_bytes, word_starts, table, data, start, length, _home(data, start, length, len(table)))


@kernel
def _home(data, start, length, size):
    """The slot a word hashes to (FNV-1a, as fastText's), where its probe starts."""
    h = np.uint64(2166136261)
    for k in range(length):
        h = _fnv_byte(h, data[start + k])
    return np.int64(h % np.uint64(size))


@kernel
def _probe(word_bytes, word_starts, table, data, start, length, slot):
    """The slot of the word from its home `slot` on: its own, or the first free one."""
    while table[slot] != -1:
        word = word_bytes[word_starts[table[slot]]:word_starts[table[slot] + 1]]
        if len(word) == length and _starts_with(data, start, word):
            break
        slot = (slot + 1) % len(table)
    return slot


PROBES_PER_WORD = 32  # slots looked at in all while the table is built, per word, at most (a load of 0.7
# takes about 2 on average): a model's words made to share a slot (FNV-1a's low bits follow the input's) took
# the square of their number, 7 s for 45,874 words, and made every lookup of a word not in the model as long


def word_table(word_bytes, word_starts, size: int, path: str):
    """fastText's word2int as Dictionary::load builds it: each word placed at its find() slot in turn, in a
    table of `size` slots; ValueError where its words collide far more than hashing makes them."""
    table, built = _word_table(word_bytes, word_starts, size, PROBES_PER_WORD * (len(word_starts) - 1) + 1024)
    if not built:
        raise ValueError(f"{path}: words made to collide in its dictionary's table (past {PROBES_PER_WORD} slots "
                         "looked at a word)")
    return table


@kernel
def _word_table(word_bytes, word_starts, size, max_probes):
    """(the table, whether it was built within `max_probes` slots looked at)."""
    table = np.full(size, -1, np.int32)
    probes = 0
    for i in range(len(word_starts) - 1):
        start, length = word_starts[i], word_starts[i + 1] - word_starts[i]
        home = _home(word_bytes, start, length, size)
        slot = _probe(word_bytes, word_starts, table, word_bytes, start, length, home)
        probes += (slot - home) % size + 1
        if probes > max_probes:
            return table, False
        table[slot] = i
    return table, True


@kernel
def _is_separator(c):
    return c == 32 or c == 10 or c == 13 or c == 9 or c == 11 or c == 12 or c == 0


@kernel
def _add_row(hidden, row, codes, centroids, norm_codes, norms):
    """QuantMatrix::addRowToVector: hidden += norm * the row's centroids."""
    norm = norms[norm_codes[row]]
    dsub = centroids.shape[2]
    for m in range(codes.shape[1]):
        c = centroids[m, codes[row, m]]
        for k in range(dsub):
            hidden[m * dsub + k] += norm * c[k]


@kernel
def _std_log(x):
    """fastText's std_log: log(x + 1e-5) of a float32, in double, back to float32."""
    return np.float32(math.log(np.float64(x) + 1e-5))


@kernel
def _predict_all(data, starts, minn, maxn, bucket, word_bytes, word_starts, word_is_label, word_table,
                 bucket_rows, codes, centroids, norm_codes, norms, output, left, right, threshold):
    count = len(starts) - 1
    labels, scores = np.full(count, -1, np.int32), np.zeros(count, np.float32)
    dim = output.shape[1]
    nlabels = output.shape[0]
    hidden = np.zeros(dim, np.float32)
    stack_nodes, stack_scores = np.empty(2 * nlabels, np.int32), np.empty(2 * nlabels, np.float32)
    log_threshold = _std_log(threshold)
    for t in range(count):
        hidden[:] = 0
        rows = 0
        pos, end = starts[t], starts[t + 1]
        while True:
            # Dictionary::readWord: a word up to a separator; a "\n" alone is the end-of-sentence word.
            first, length, eos = -1, 0, False
            while pos < end:
                c = data[pos]
                pos += 1
                if _is_separator(c):
                    if length == 0:
                        if c == 10:
                            eos = True
                            break
                        continue
                    if c == 10:
                        pos -= 1  # read again: the next word is the end of sentence
                    break
                if length == 0:
                    first = pos - 1
                length += 1
            if length == 0 and not eos:
                break
            # The token's bytes: the word read, or "</s>".
            if eos:
                token, token_start, token_len = EOS_BYTES, 0, 4
            else:
                token, token_start, token_len = data, first, length
            wid = word_table[_slot(word_bytes, word_starts, word_table, token, token_start, token_len)]
            is_eos = token_len == len(EOS_BYTES) and _starts_with(token, token_start, EOS_BYTES)
            if wid >= 0:
                is_label = word_is_label[wid]
            else:
                is_label = token_len >= len(LABEL_BYTES) and _starts_with(token, token_start, LABEL_BYTES)
            if not is_label:
                if wid >= 0:
                    _add_row(hidden, wid, codes, centroids, norm_codes, norms)
                    rows += 1
                if not is_eos:
                    # Dictionary::computeSubwords of "<" + token + ">": the character n-grams of
                    # minn to maxn characters (UTF-8 continuation bytes stay with their character).
                    width = token_len + 2
                    for i in range(width):
                        b = _bracketed(token, token_start, token_len, i)
                        if (b & 0xC0) == 0x80:
                            continue
                        g = np.uint64(2166136261)
                        j, n = i, 1
                        while j < width and n <= maxn:
                            g = _fnv_byte(g, _bracketed(token, token_start, token_len, j))
                            j += 1
                            while j < width and (_bracketed(token, token_start, token_len, j) & 0xC0) == 0x80:
                                g = _fnv_byte(g, _bracketed(token, token_start, token_len, j))
                                j += 1
                            if n >= minn and not (n == 1 and (i == 0 or j == width)):
                                row = bucket_rows[np.int64(g % np.uint64(bucket))]
                                if row >= 0:
                                    _add_row(hidden, row, codes, centroids, norm_codes, norms)
                                    rows += 1
                            n += 1
            if is_eos:
                break
        if rows == 0:
            continue
        scale = np.float32(1.0 / rows)
        for k in range(dim):
            hidden[k] *= scale
        # HierarchicalSoftmaxLoss::dfs with k = 1, left child first: a leaf not pruned is the best so far.
        best_node, best_score, top = -1, np.float32(0), 0
        stack_nodes[0], stack_scores[0], top = 2 * nlabels - 2, np.float32(0), 1
        while top > 0:
            top -= 1
            node, score = stack_nodes[top], stack_scores[top]
            if score < log_threshold or (best_node >= 0 and score < best_score):
                continue
            if left[node] == -1 and right[node] == -1:
                best_node, best_score = node, score
                continue
            f = np.float32(0)
            for k in range(dim):
                f += output[node - nlabels, k] * hidden[k]
            f = np.float32(1.0 / np.float64(np.float32(1) + np.float32(math.exp(-f))))
            stack_nodes[top], stack_scores[top] = right[node], score + _std_log(f)
            stack_nodes[top + 1] = left[node]
            stack_scores[top + 1] = score + _std_log(np.float32(1.0 - np.float64(f)))
            top += 2
        labels[t], scores[t] = best_node, np.float32(math.exp(best_score))
    return labels, scores



@kernel
def _bracketed(token, start, length, i):
    """Byte i of "<" + token + ">"."""
    if i == 0:
        return np.uint8(60)
    if i == length + 1:
        return np.uint8(62)
    return token[start + i - 1]
