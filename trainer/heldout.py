"""Held-out loss that means something: the same rows every time, in their stored order, from documents
the training shards do not hold.

The pipeline writes the held-out documents (chosen by a hash of their id: spark_stages/shards.py
`heldout_share`) to SHARDS/heldout/, or NAME/heldout/ per source, named in mixture.json. Every
`every` steps the loop evaluates the first `rows` rows of each held-out folder (shard by shard, row by
row: no shuffle), rank r taking rows r, r + world, ...; it reports the loss per token and bits per byte
(the loss in bits over the UTF-8 bytes the predicted tokens stand for: comparable across tokenizers),
each with the standard error of the estimate over rows (a ratio estimator), per source for a mixture.
Bits per byte needs the tokenizer: `tokenizer`, else OUT/tokenizer/tokenizer.json beside the shards
(the pipeline's layout) or SHARDS/tokenizer.json, when its hash is the shards'; without one only the
loss is reported.
"""

import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from loaders.collate import IGNORE, collate
from loaders.mixture import read_mixture_file
from loaders.shard_reader import ShardError, ShardSource
from schemas.shards import ShardFileError, check_shard_file, read_checked_shard

log = logging.getLogger(__name__)
HELDOUT = "heldout"


@dataclass(frozen=True)
class HeldOutConfig:
    """The held-out evaluation during training."""
    every: int = 50  # steps between evaluations (0: none), and one after the last step
    rows: int = 64  # rows evaluated each time per source: the first ones of its held-out shards, always the same
    batch_rows: int = 8  # rows per forward pass on each rank
    heldout: str = ""  # a held-out shards folder (default: SHARDS/heldout, or each source's in mixture.json)
    tokenizer: str = ""  # for bits per byte (default: OUT/tokenizer/ beside OUT/shards, or SHARDS/, if it is theirs)

    def __post_init__(self):
        if self.every < 0 or self.rows < 1 or self.batch_rows < 1:
            raise ValueError(f"need every >= 0, rows >= 1, batch_rows >= 1, got {self.every}, {self.rows}, "
                             f"{self.batch_rows}")


def heldout_folders(shards: str, cfg: HeldOutConfig) -> dict[str, str]:
    """Each source's held-out folder that exists: `heldout`, SHARDS/heldout, or mixture.json's."""
    if cfg.heldout:
        return {"default": cfg.heldout}
    if shards.endswith(".json"):
        mixture = read_mixture_file(Path(shards))
        return {name: mixture.location(Path(shards), name, HELDOUT) for name, s in mixture.sources.items()
                if s.heldout}
    folder = Path(shards) / HELDOUT
    return {"default": str(folder)} if (folder / "index.json").is_file() else {}


def token_bytes(tokenizer_path: str, vocab_size: int) -> np.ndarray:
    """UTF-8 bytes each token id below vocab_size stands for (0 for special tokens and ids it lacks); a
    tokenizer_for() tokenizer, whose ids are all below it."""
    from tokenizers import Tokenizer

    from prep.tokenizer.pretokenize import piece_bytes

    tokenizer = Tokenizer.from_file(tokenizer_path)
    special = {t.content for t in tokenizer.get_added_tokens_decoder().values() if t.special}
    out = np.zeros(vocab_size, np.int64)
    for piece, i in tokenizer.get_vocab(with_added_tokens=True).items():
        out[i] = 0 if piece in special else len(piece_bytes(piece))
    return out


def tokenizer_for(shards: str, cfg, sha256: str, vocab_size: int, setting: str = "heldout.tokenizer") -> str | None:
    """The tokenizer to count bytes with (or encode benchmarks with): the configured one (cfg.tokenizer, the
    setting named `setting`), or the pipeline's beside the shards if its hash is the shards' (another
    tokenizer would count other bytes). ValueError for one whose ids do not all fit the shards' vocab_size:
    the hash ties it to an index that is itself a file from elsewhere."""
    from prep.tokenizer.encode import TokenizerFile

    base = Path(shards).parent if shards.endswith(".json") else Path(shards)
    candidates = [cfg.tokenizer] if cfg.tokenizer else [str(base.parent / "tokenizer" / "tokenizer.json"),
                                                         str(base / "tokenizer.json")]
    for path in candidates:
        if Path(path).is_file() and (file := TokenizerFile.read(path)).sha256 == sha256:  # the shards job's hash
            if file.vocab_size > vocab_size:
                raise ValueError(f"{path}: token id {file.vocab_size - 1} is past the shards' vocab_size {vocab_size}")
            return path
        if cfg.tokenizer:
            raise ValueError(f"{setting} {path} is not the tokenizer of the shards (its hash differs)")
    return None


def first_rows(location: str, rows: int) -> tuple[list[tuple[np.ndarray, np.ndarray]], ShardSource]:
    """The first `rows` rows of a shards folder in its stored order, each shard checked (size, checksum,
    schema) as the loader checks it."""
    source = ShardSource(location)
    found = []
    for shard, entry in enumerate(source.entries):
        if len(found) >= rows:
            break
        path = source.local_path(shard)
        try:
            check_shard_file(path, entry, source.index.checksum_algorithm)
            table = read_checked_shard(path, entry)
        except ShardFileError as e:
            raise ShardError(f"{location}/{entry.file}: {e}") from None
        needed = table.slice(0, rows - len(found))  # the rows wanted only, not the whole shard, as arrays
        for t, c in zip(needed.column("tokens").to_numpy(zero_copy_only=False),
                        needed.column("cu_seqlens").to_numpy(zero_copy_only=False)):
            found.append((np.asarray(t, np.uint32), np.asarray(c, np.int32)))
    return found, source


def _ratio(numerators: np.ndarray, denominators: np.ndarray) -> tuple[float, float]:
    """Σn / Σd and its standard error over the rows (the ratio estimator's, by the delta method)."""
    total = denominators.sum()
    if total <= 0:
        return math.nan, math.nan
    ratio = numerators.sum() / total
    k = len(numerators)
    if k < 2:
        return float(ratio), math.nan
    residual = numerators - ratio * denominators
    return float(ratio), float(math.sqrt((residual ** 2).sum() / (k * (k - 1))) / denominators.mean())


class HeldOut:
    def __init__(self, shards: str, cfg: HeldOutConfig, rank: int, world: int, device: torch.device,
                 vocab_size: int, tokenizer_sha256: str, training: frozenset[tuple[str, str]] = frozenset()):
        """`training`: the (checksum algorithm, checksum) of every training shard: a held-out shard among them
        is refused (heldout.heldout set to the training shards had measured a "held-out" loss on them)."""
        self.cfg, self.rank, self.world, self.device = cfg, rank, world, device
        self.sets = {}
        for name, location in heldout_folders(shards, cfg).items():
            try:
                rows, source = first_rows(location, cfg.rows)
            except ShardError as e:
                if "lists no shards" in str(e):  # too small an input for any held-out document
                    log.warning("%s: no held-out rows", location)
                    continue
                raise
            if source.index.tokenizer_sha256 != tokenizer_sha256:
                raise ShardError(f"{location}: held out with another tokenizer than the training shards")
            algorithm = source.index.checksum_algorithm
            if shared := [e.file for e in source.entries if (algorithm, e.checksum) in training]:
                raise ShardError(f"{location}: {shared[0]} is a training shard too ({len(shared)} of "
                                 f"{len(source.entries)}): a held-out loss needs rows the run does not train on")
            self.sets[name] = rows
        self.vocab_size = vocab_size
        path = tokenizer_for(shards, cfg, tokenizer_sha256, vocab_size) if self.sets else None
        self.bytes_of = token_bytes(path, vocab_size) if path else None

    def __bool__(self) -> bool:
        return bool(self.sets)

    def evaluate(self, model, seq_len: int, pad_id: int) -> dict:
        """Every rank together (each the same number of forward passes): the loss and bits per byte of
        each source's held-out rows, and over all of them."""
        per_row = {name: self._rows(model, rows, seq_len, pad_id) for name, rows in self.sets.items()}
        result = {name: self._figures(stats) for name, stats in per_row.items()}
        if len(per_row) > 1:
            result["all"] = self._figures(np.concatenate(list(per_row.values())))
        return result

    def _rows(self, model, rows, seq_len: int, pad_id: int) -> np.ndarray:
        """[rows, 3]: each held-out row's (nats, predicted tokens, bytes), gathered from every rank."""
        mine = rows[self.rank::self.world]
        passes = math.ceil(math.ceil(len(rows) / self.world) / self.cfg.batch_rows)
        out = []
        with torch.no_grad():
            for p in range(passes):  # a rank out of rows runs a pass on a row it then drops: FSDP's gathers
                chunk = mine[p * self.cfg.batch_rows:(p + 1) * self.cfg.batch_rows]
                real = len(chunk)
                batch = collate(chunk or rows[:1], seq_len, pad_id, self.vocab_size)
                tensors = {k: torch.as_tensor(v, device=self.device) for k, v in batch.items()}
                row_loss = model(tensors["input_ids"], tensors["position_ids"], tensors["cu_seqlens"],
                                 labels=tensors["labels"])
                labels = batch["labels"]
                predicted = (labels != IGNORE).sum(-1)
                if self.bytes_of is not None:
                    safe = np.where(labels == IGNORE, 0, labels)
                    size = np.where(labels == IGNORE, 0, self.bytes_of[safe]).sum(-1)
                else:
                    size = np.zeros(len(labels), np.int64)
                figures = np.stack([row_loss.double().cpu().numpy(), predicted, size], 1)[:real]
                out.append(figures)
        mine_figures = np.concatenate(out) if out else np.zeros((0, 3))
        everyone: list = [None] * self.world
        dist.all_gather_object(everyone, mine_figures)
        return np.concatenate(everyone)

    def _figures(self, stats: np.ndarray) -> dict:
        loss, loss_se = _ratio(stats[:, 0], stats[:, 1])
        figures = {"rows": len(stats), "tokens": int(stats[:, 1].sum()), "loss": loss, "loss_se": loss_se}
        if self.bytes_of is not None:
            bpb, bpb_se = _ratio(stats[:, 0] / math.log(2), stats[:, 2])
            figures.update(bytes=int(stats[:, 2].sum()), bits_per_byte=bpb, bits_per_byte_se=bpb_se)
        return figures
