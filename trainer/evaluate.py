"""Bits per byte of held-out text under a trained checkpoint: models of tokenizers of different
granularity compared fairly (a loss per token is not: a superword tokenizer has fewer, harder tokens).

    python -m jobs.evaluate --run-dir DIR --shards SHARDS --tokenizer TOKENIZER.json --input HELD_OUT

Loads the newest complete checkpoint of DIR whose files match its manifest (trainer/checkpoints.py) into
the model the run trained (its preset, the shards' embedding size), encodes each held-out document as
the shards job does (<|bos|> ids <|eos|>), and sums the model's loss over every token it predicts, in
windows of the shards' seq_len (each window starts without context). Bits per byte = that loss in nats /
ln 2 / the documents' UTF-8 bytes. Prints one JSON object. One process; no torchrun needed. The
checkpoint goes through the check --resume makes before anything of it is read: its metadata is a
pickle, so a checkpoint another user owns or can write would run their code.
"""

import contextlib
import math
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict

from loaders.mixture import sources_of
from loaders.shard_reader import ShardError, ShardSource
from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, FileWarning, read_file
from prep.tokenizer.encode import TokenizerFile, encode_documents
from schemas.mixture import MixtureError
from schemas.trust import UntrustedPath
from trainer.checkpoints import complete_checkpoints, first_line, load_checkpoint, pin_intact
from trainer.loop import TrainConfig, build_model
from trainer.model import PRESETS


@dataclass(frozen=True)
class EvalConfig:
    run_dir: str = "out/train"  # the training run: its newest intact checkpoint is evaluated
    shards: str = "out/sample/shards"  # what it trained on (folder, URL or mixture.json): embedding size, window
    tokenizer: str = "out/sample/tokenizer/tokenizer.json"  # the tokenizer of those shards
    input: str = ""  # held-out documents, anything the jobs read
    model: str = "tiny"  # the run's preset

    def __post_init__(self):
        if self.model not in PRESETS:
            raise ValueError(f"model must be one of {', '.join(PRESETS)}, got {self.model!r}")


class EvalStopped(Exception):
    """What stops the evaluation, in one line (jobs.evaluate: exit code 2)."""


def held_out_loss(model, tokens: list, seq_len: int) -> tuple[float, int]:
    """The summed loss in nats of every predicted token, and how many, over windows of seq_len + 1."""
    nats, count = 0.0, 0
    with torch.no_grad():
        for doc in tokens:
            ids = torch.as_tensor(doc.astype("int64"))
            for lo in range(0, len(ids) - 1, seq_len):
                window = ids[lo:lo + seq_len + 1]
                inputs, labels = window[:-1][None], window[1:][None]
                positions = torch.arange(inputs.shape[1])[None]
                cu_seqlens = torch.tensor([0, inputs.shape[1]], dtype=torch.int32)
                nats += model(inputs, positions, cu_seqlens, labels=labels).sum().item()
                count += labels.numel()
    return nats, count


def newest_intact(run_dir: Path, pins: contextlib.ExitStack) -> tuple[Path, Path]:
    """(the newest complete checkpoint whose files match its manifest, that checkpoint pinned in `pins`: read
    it through that path) (a damaged one is named on stderr and passed over, left where it is); SystemExit with
    one line when there is none, or one is not the user's."""
    checkpoints = complete_checkpoints(run_dir / "checkpoints")
    for checkpoint in checkpoints:
        try:
            folder, problem = pin_intact(checkpoint, pins)
        except UntrustedPath as e:
            raise EvalStopped(str(e)) from None
        if problem is None:
            return checkpoint, folder
        print(f"jobs.evaluate: {checkpoint} passed over: {problem}", file=sys.stderr)
    raise EvalStopped(f"no complete checkpoint in {run_dir}" if not checkpoints else
                      f"no checkpoint in {run_dir} is intact")


def evaluate(cfg: EvalConfig) -> dict:
    """The figures of the held-out documents; EvalStopped for what it cannot evaluate (files missing or refused,
    no document read), before the checkpoint is loaded where the inputs decide it."""
    if not cfg.input:
        raise EvalStopped("--input is required: the held-out documents")
    try:
        index = ShardSource(sources_of(cfg.shards)[0].location).index  # a folder, a URL or a mixture
        tokenizer = TokenizerFile.read(cfg.tokenizer)
        files = expand_inputs(cfg.input)
    except (ShardError, MixtureError, ValueError, OSError) as e:  # InputError and the tokenizer's are ValueErrors
        raise EvalStopped(str(e)) from None
    if tokenizer.sha256 != index.tokenizer_sha256:
        raise EvalStopped(f"{cfg.tokenizer} is not the tokenizer of {cfg.shards}")
    texts, left_out = held_out_texts(files)
    for why, count in left_out.most_common(10):
        print(f"jobs.evaluate: {count} records left out: {why}", file=sys.stderr)
    if not texts:
        raise EvalStopped(f"no document read from {cfg.input} ({left_out.total()} records left out)")
    with contextlib.ExitStack() as pins:
        figures = _evaluate(cfg, *newest_intact(Path(cfg.run_dir), pins), index, tokenizer, texts)
    return {**figures, "left_out": left_out.total()}


def held_out_texts(files) -> tuple[list[str], Counter]:
    """(the documents' texts, the records that are none by reason: quarantined, or a file that could not be
    read; a file's warning is no record)."""
    texts, left_out = [], Counter()
    for file in files:
        for record in read_file(file):
            if isinstance(record, Document):
                texts.append(record.text)
            elif not isinstance(record, FileWarning):
                left_out[record.error] += 1
    return texts, left_out


def _evaluate(cfg: EvalConfig, checkpoint: Path, folder: Path, index, tokenizer, texts: list[str]) -> dict:
    """The held-out loss of `texts` under the checkpoint read through `folder` (pinned)."""
    with tempfile.TemporaryDirectory() as rendezvous:  # FSDP wants a process group, even of one
        dist.init_process_group("gloo", init_method=f"file://{rendezvous}/store", rank=0, world_size=1)
        try:
            model = build_model(TrainConfig(model=cfg.model), index.embedding_size, torch.device("cpu"))
            state = {"model": get_model_state_dict(model)}
            try:
                load_checkpoint(state, folder)
            except CheckpointException as e:  # a BaseException: its files matched the manifest, yet DCP refused
                raise EvalStopped(f"{checkpoint} cannot be loaded: {first_line(e)}") from None
            set_model_state_dict(model, state["model"])
            model.eval()
            nats, predicted = held_out_loss(model, encode_documents(tokenizer, texts), index.seq_len)
        finally:
            dist.destroy_process_group()
    size = sum(len(t.encode()) for t in texts)
    return {"checkpoint": checkpoint.name, "docs": len(texts), "bytes": size, "tokens": predicted,
            "loss_per_token": round(nats / max(predicted, 1), 4),
            "bits_per_byte": round(nats / math.log(2) / max(size, 1), 4)}

