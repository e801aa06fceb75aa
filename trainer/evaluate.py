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
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict

from loaders.mixture import sources_of
from loaders.shard_reader import ShardSource
from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from prep.tokenizer.encode import TokenizerFile, encode_documents
from schemas.trust import UntrustedPath
from trainer.checkpoints import complete_checkpoints, first_line, load_checkpoint, pin_intact
from trainer.loop import TrainConfig, build_model


@dataclass(frozen=True)
class EvalConfig:
    run_dir: str = "out/train"  # the training run: its newest intact checkpoint is evaluated
    shards: str = "out/sample/shards"  # what it trained on (folder, URL or mixture.json): embedding size, window
    tokenizer: str = "out/sample/tokenizer/tokenizer.json"  # the tokenizer of those shards
    input: str = ""  # held-out documents, anything the jobs read
    model: str = "tiny"  # the run's preset


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
            raise SystemExit(f"jobs.evaluate: error: {e}") from None
        if problem is None:
            return checkpoint, folder
        print(f"jobs.evaluate: {checkpoint} passed over: {problem}", file=sys.stderr)
    raise SystemExit(f"no complete checkpoint in {run_dir}" if not checkpoints else
                     f"jobs.evaluate: error: no checkpoint in {run_dir} is intact")


def evaluate(cfg: EvalConfig) -> dict:
    with contextlib.ExitStack() as pins:
        return _evaluate(cfg, *newest_intact(Path(cfg.run_dir), pins))


def _evaluate(cfg: EvalConfig, checkpoint: Path, folder: Path) -> dict:
    """evaluate, the checkpoint read through `folder` (pinned)."""
    index = ShardSource(sources_of(cfg.shards)[0].location).index  # a folder, a URL or a mixture (shared settings)
    tokenizer = TokenizerFile.read(cfg.tokenizer)
    if tokenizer.sha256 != index.tokenizer_sha256:
        raise SystemExit(f"{cfg.tokenizer} is not the tokenizer of {cfg.shards}")
    texts = [r.text for f in expand_inputs(cfg.input) for r in read_file(f) if isinstance(r, Document)]
    with tempfile.TemporaryDirectory() as rendezvous:  # FSDP wants a process group, even of one
        dist.init_process_group("gloo", init_method=f"file://{rendezvous}/store", rank=0, world_size=1)
        try:
            model = build_model(TrainConfig(model=cfg.model), index.embedding_size, torch.device("cpu"))
            state = {"model": get_model_state_dict(model)}
            try:
                load_checkpoint(state, folder)
            except CheckpointException as e:  # a BaseException: its files matched the manifest, yet DCP refused
                raise SystemExit(f"jobs.evaluate: error: {checkpoint} cannot be loaded: {first_line(e)}") from None
            set_model_state_dict(model, state["model"])
            model.eval()
            nats, predicted = held_out_loss(model, encode_documents(tokenizer, texts), index.seq_len)
        finally:
            dist.destroy_process_group()
    size = sum(len(t.encode()) for t in texts)
    return {"checkpoint": checkpoint.name, "docs": len(texts), "bytes": size, "tokens": predicted,
            "loss_per_token": round(nats / max(predicted, 1), 4),
            "bits_per_byte": round(nats / math.log(2) / max(size, 1), 4)}

