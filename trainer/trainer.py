"""The training run as one object, as torchtitan's Trainer: the model, optimizer and schedule, the loader,
the checkpoints, the guard, the evaluations, the ranks' timing and the metrics, with rank and world.
`train()` is the loop; `train_step`, `roll_back`, `save` and `resume` are its parts; `state_dict()` is what
a checkpoint holds (each component's own state_dict()).

Every step: a batch from ShardLoader, forward with attention inside documents only, the loss averaged over
the real tokens of all ranks, AdamW with warmup then cosine decay (times the guard's factor), gradient
clipping; the guard (trainer/guard.py) applies nothing for a non-finite loss or gradient and rolls back
past a loss spike (roll_back: data skipped, or the learning rate lowered).
"""

import functools
import hashlib
import json
import logging
import secrets
import statistics
import time
import warnings
from pathlib import Path
from typing import NamedTuple

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from loaders.collate import IGNORE
from loaders.shard_reader import ShardError
from schemas.mixture import MixtureError
from schemas.trust import UntrustedPath
from trainer import contamination
from trainer.benchmarks import Benchmarks
from trainer.checkpoints import DAMAGED, Checkpoints, Unfit, read_manifest, rng_state, set_rng_state
from trainer.config import TrainConfig
from trainer.errors import RunStopped
from trainer.guard import Guard, TooManyRollbacks
from trainer.heldout import HeldOut, tokenizer_for
from trainer.mc_items import ItemsError, benchmark_files, fixed_subset, read_items
from trainer.metrics import Metrics
from trainer.parallel import build_model, build_optimizer, peak_flops
from trainer.preflight import StartChecks, check_ranks
from trainer.stragglers import ForwardTimer, Stragglers

log = logging.getLogger(__name__)
LOADER_FIGURES_EVERY = 10  # steps between the loader's counters on the dashboards


class Step(NamedTuple):
    loss: float  # over the real tokens of every rank
    grad_norm: float
    token_sum: int  # the global batch's token ids summed: a fingerprint of the data, the same at any world size
    source_rows: list[int]  # rows of each source in the global batch
    source_tokens: list[int]  # real tokens of each source in the global batch
    source_loss: list[float | None]  # their mean loss (None: the source had no token in this batch)
    event: str | None  # why nothing was applied: "nonfinite", "spike" (trainer/guard.py) or "empty"; None: applied


class Trainer:
    def __init__(self, cfg: TrainConfig, device: torch.device, loader, run_dir: Path):
        self.cfg, self.device, self.loader, self.run_dir = cfg, device, loader, run_dir
        self.rank, self.world, self.step = dist.get_rank(), dist.get_world_size(), 0
        self.guard = Guard(cfg.guard)
        self.last_applied: dict | None = None  # the last batch a step applied: is a spike the weights' fault?
        self.model = build_model(cfg, loader.embedding_size, device)
        self.optimizer, self.scheduler = build_optimizer(self.model, cfg, self.guard.lr_factor)
        self.checkpoints = Checkpoints(run_dir, cfg.keep_checkpoints, self.rank, self.world, device,
                                       cfg.checkpoint_checksums)
        self.timer = ForwardTimer(self.model.blocks, device)
        # Before any collective a mismatched rank could hang in (a checkpoint's load), and after one.
        self.start: StartChecks = self.check()
        self.stragglers = Stragglers(cfg.stragglers, [r["host"] for r in self.start.ranks], device)
        lineage = [secrets.token_hex(8) if self.rank == 0 else None]  # a run and its resumes (rollbacks stay in it)
        dist.broadcast_object_list(lineage, src=0)
        self.lineage: str = lineage[0]
        self.heldout = self._heldout()
        self.benchmarks, self.notes = self._benchmarks()
        self.metrics = Metrics(run_dir / "metrics.jsonl" if self.rank == 0 else None,
                               self.model.flops_per_token(loader.seq_len), peak_flops(device), self.world,
                               cfg.dashboards)

    @functools.cached_property
    def data_identity(self) -> str:
        """What the loader reads, by content: each source's name and its shards' checksums (the same shards
        copied elsewhere, or written again from the same input, are the same data)."""
        sources = [[name, s.source.index.checksum_algorithm, [e.checksum for e in s.source.entries]]
                   for name, s in zip(self.loader.sources, self.loader.sets)]
        return hashlib.sha256(json.dumps(sources).encode()).hexdigest()

    def check(self) -> StartChecks:
        checks = check_ranks(self.model, self.optimizer, self.loader, self.cfg)
        if checks.problem:
            raise RunStopped(checks.problem, 2)
        return checks

    def _heldout(self) -> HeldOut | None:
        if not self.cfg.heldout.every:
            return None
        index = self.loader.sets[0].source.index
        training = frozenset((s.source.index.checksum_algorithm, e.checksum) for s in self.loader.sets
                             for e in s.source.entries)
        try:
            heldout = HeldOut(self.cfg.shards, self.cfg.heldout, self.rank, self.world, self.device, index.vocab_size,
                              index.tokenizer_sha256, training)
        except (ShardError, MixtureError, ValueError) as e:
            raise RunStopped(f"held-out shards: {e}", 2) from None
        if not heldout:
            log.warning("no held-out shards (SHARDS/heldout, mixture.json's, or heldout.heldout): no held-out loss")
        return heldout or None

    def _benchmarks(self) -> tuple[Benchmarks | None, list[str]]:
        """The benchmarks' fixed subsets, and a warning per benchmark not cut from the training data."""
        from prep.tokenizer.encode import TokenizerFile

        cfg = self.cfg.eval
        if not cfg.benchmarks or not cfg.every:
            return None, []
        try:
            read = {name: read_items(name, spec) for name, spec in cfg.benchmarks.items()}
            index = self.loader.sets[0].source.index
            path = tokenizer_for(self.cfg.shards, cfg, index.tokenizer_sha256, index.vocab_size, "eval.tokenizer")
        except (ItemsError, ValueError) as e:
            raise RunStopped(f"eval.benchmarks: {e}", 2) from None
        if path is None:
            raise RunStopped("eval.benchmarks: the shards' tokenizer is not beside them: set eval.tokenizer", 2)
        notes = [f"benchmark {name}: {n} records left out ({why})" for name, (_, skipped) in read.items()
                 for why, n in skipped.items()]
        if self.rank == 0:
            sources = {name: shard_set.source for name, shard_set in zip(self.loader.sources, self.loader.sets)}
            notes += contamination.warnings({name: benchmark_files(spec) for name, spec in cfg.benchmarks.items()},
                                            sources)
        items = {name: fixed_subset(found, cfg.items) for name, (found, _) in read.items()}
        return Benchmarks(cfg, items, TokenizerFile.read(path), self.loader.seq_len, self.rank, self.world,
                          self.device), notes

    # -- the loop -----------------------------------------------------------------------------------------------

    def train(self) -> None:
        with self.metrics:
            self.metrics.start(self.start.ranks, self.start.warnings + self.notes)
            if self.cfg.resume:
                self.resume()
            elif found := self.checkpoints.complete():  # a new run would overwrite them at its first save
                raise RunStopped(f"{self.checkpoints.folder} holds this run folder's checkpoints (the newest "
                                 f"{found[0].name}): --resume goes on from them; a new run takes another folder", 2)
            while self.step < self.cfg.steps:
                started = time.perf_counter()  # before next(): the data wait is part of the step
                batch = next(self.loader)
                data_wait = time.perf_counter() - started
                result = self.train_step(batch)
                if result.event == "spike":
                    self.roll_back(result, batch)
                    continue
                lr = self.scheduler.get_last_lr()[0]
                self.scheduler.step()
                self.step += 1
                if result.event == "nonfinite":
                    self.guard.not_applied()
                    self.metrics.event("nonfinite", self.step, loss=result.loss, grad_norm=result.grad_norm)
                elif result.event == "empty":
                    self.metrics.event("empty_batch", self.step, then="not applied: no token to predict")
                else:
                    self.guard.applied(result.loss)
                    self.last_applied = batch  # its own tensors (loaders/device_ring.py): safe to keep
                saving = time.perf_counter()
                if self.step % self.cfg.checkpoint_every == 0 or self.step == self.cfg.steps:
                    self.save()
                self.checkpoints.poll()
                saving = time.perf_counter() - saving
                self._record(result, lr, data_wait, time.perf_counter() - started, saving)
                if (compared := self.stragglers.step(data_wait, self.timer, self.step)) is not None:
                    self.metrics.ranks(self.step, compared, self.stragglers.hosts)
                self._evaluate()
                if self.step % LOADER_FIGURES_EVERY == 0:
                    self.metrics.loader(self.loader.stats(), self.step)
            self.checkpoints.wait()
        # Each rank's data loading counters (decompressions here and on its node, cache hits, waits).
        (self.run_dir / f"loader-rank{self.rank}.json").write_text(json.dumps(
            {**self.loader.stats(), "guard": self.guard.state_dict()}) + "\n")

    def train_step(self, batch: dict) -> Step:
        """One step; the optimizer steps only when the loss is no spike and the loss and the gradient are
        finite (every rank has the same global figures, so every rank decides the same)."""
        labels, sources = batch["labels"], len(self.loader.sources)
        self.timer.recording = self.cfg.stragglers.every > 0
        row_loss = self.model(batch["input_ids"], batch["position_ids"], batch["cu_seqlens"], labels=labels,
                              loss_chunk_tokens=self.cfg.loss_chunk_tokens)
        loss_sum = row_loss.sum()
        row_tokens = (labels != IGNORE).sum(-1).double()
        by_source = torch.zeros(3, sources, dtype=torch.float64, device=labels.device).index_add_(
            1, batch["source"], torch.stack([torch.ones_like(row_tokens), row_tokens, row_loss.detach().double()]))
        counts = torch.cat([torch.stack([row_tokens.sum(), loss_sum.detach().double(),
                                         batch["input_ids"].sum().double()]), by_source.flatten()])
        dist.all_reduce(counts)  # one reduction for the step's figures and every source's
        real_tokens = max(1.0, counts[0].item())
        loss = counts[1].item() / real_tokens
        # a batch without one token to predict (rows of one-token documents) has no loss: neither applied nor
        # counted among the guard's recent losses, whose median a run of zeros would drag down
        event = "empty" if counts[0].item() == 0 else self.guard.verdict(loss)
        # FSDP averages gradients over ranks: scale so the result is the gradient of the global mean. The
        # backward runs whatever the verdict: FSDP's hooks expect it after a forward.
        (loss_sum * self.world / real_tokens).backward()
        self.timer.recording = False
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        grad_norm = (grad_norm.full_tensor() if hasattr(grad_norm, "full_tensor") else grad_norm).item()
        if event is None and not self.guard.gradient_ok(grad_norm):
            event = self.guard.nonfinite_verdict()
        if event is None:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        rows, tokens, losses = counts[3:].view(3, sources).tolist()
        return Step(loss, grad_norm, int(counts[2].item()), [int(r) for r in rows], [int(t) for t in tokens],
                    [loss / t if t else None for t, loss in zip(tokens, losses)], event)

    def forward_loss(self, batch: dict) -> float:
        """The global loss of a batch on the current weights, nothing applied (a probe)."""
        with torch.no_grad():
            labels = batch["labels"]
            row_loss = self.model(batch["input_ids"], batch["position_ids"], batch["cu_seqlens"], labels=labels,
                                  loss_chunk_tokens=self.cfg.loss_chunk_tokens)
            counts = torch.stack([(labels != IGNORE).sum().double(), row_loss.sum().double()])
            dist.all_reduce(counts)
        return counts[1].item() / max(1.0, counts[0].item())

    def _record(self, result: Step, lr: float, data_wait: float, seconds: float, saving: float) -> None:
        per_source = {f"source_{key}": dict(zip(self.loader.sources, getattr(result, f"source_{key}")))
                      for key in ("rows", "tokens", "loss")} if len(self.loader.sources) > 1 else {}
        self.metrics.write(step=self.step, loss=result.loss, lr=lr, grad_norm=result.grad_norm,
                           tokens_per_s=self.cfg.global_batch_size * self.loader.seq_len / seconds,
                           data_wait_pct=100 * data_wait / seconds, data_wait_ms=1000 * data_wait,
                           step_seconds=seconds, checkpoint_seconds=saving, token_sum=result.token_sum,
                           position=self.loader.served_position, applied=result.event is None, **per_source)

    def _evaluate(self) -> None:
        last = self.step == self.cfg.steps
        if self.heldout and (self.step % self.cfg.heldout.every == 0 or last):
            self.metrics.heldout(self.step, self.heldout.evaluate(self.model, self.loader.seq_len, self.loader.pad_id))
        if self.benchmarks and (self.step % self.cfg.eval.every == 0 or last):
            self.metrics.benchmarks(self.step, self.benchmarks.evaluate(self.model))

    # -- repairs ------------------------------------------------------------------------------------------------

    def roll_back(self, spike: Step, batch: dict) -> None:
        """After a loss spike at the next step: back to the newest checkpoint of this run that loads; bad
        data (skipped, with the stretch after it that is bad too) or an optimizer instability (replayed with
        a lowered learning rate), as trainer/guard.py tells them. Without a checkpoint yet, the stretch
        alone is passed over (nothing to go back to)."""
        at, served, rows = self.step + 1, self.loader.served_position, self.loader.global_batch_size
        try:
            self.guard.count_rollback(at)
        except TooManyRollbacks as e:
            self.metrics.event("stopped", at, loss=spike.loss, reason=str(e))
            raise RunStopped(str(e), 3) from None
        before = list(self.guard.recent)  # the losses the spike was judged against
        # the weights that spiked, judged by the batch they were last trained on (before they are replaced)
        weights_loss = self.forward_loss(self.last_applied) if self.last_applied is not None else None
        sound = self.cfg.guard.diagnose and weights_loss is not None and not self.guard.far(weights_loss, before)
        # sound weights: the data spiked, and these weights, trained furthest, tell a bad batch best (the
        # barely trained weights of an early checkpoint score random tokens much as text)
        stretch = self._stretch(served, rows, before) if sound else None
        candidates = self.checkpoints.rollback_candidates(self.lineage)
        restored = self._restore(candidates, rollback=True) if candidates else None
        if candidates and restored is None:
            raise RunStopped(f"a loss spike at step {at}, and no checkpoint to go back to loads", 3)
        reference = self.guard.reference(self.guard.recent, before) if restored else before
        probe_loss = self.forward_loss(batch) if restored else spike.loss
        cause = self.guard.blame(probe_loss, reference, weights_loss, before, served)
        details = {"loss": spike.loss, "cause": cause, "probe_loss": probe_loss,
                   "baseline": statistics.median(reference[-5:]) if reference else None, "weights_loss": weights_loss,
                   "back_to": self.step, "checkpoint": restored.name if restored else None}
        if cause == "data":
            details["after_replay"] = self.guard.replayed(served)  # blamed on the optimizer once already
            details["probed_on"] = "the weights that spiked" if stretch else "the restored weights"
            details.update(self._skip_bad_data(served, rows, stretch or self._stretch(served, rows, reference)))
        else:
            details["lr_factor"] = self.guard.calm_down(self.step, at - 1, served)
            details["lowered_until_step"], details["ramped_by_step"] = (int(x) for x in self.guard.calm[1:3])
            self._recompute_lr()
        self.metrics.event("rollback" if restored else "spike", at, **details)

    def _stretch(self, served: int, rows: int, reference: list[float]) -> tuple[int, int, list]:
        """(the floor in batches, the end of the bad stretch from `served`, the positions probed), found by
        probing forward on the current weights (trainer/guard.py), judged against `reference`."""
        floor = self.guard.skip_floor(served, rows)
        end, probed = self.guard.stretch_end(served, rows, floor,
                                             lambda position: self.guard.far(self.probe(position), reference))
        return floor, end, probed

    def _skip_bad_data(self, served: int, rows: int, stretch: tuple[int, int, list]) -> dict:
        """The bad stretch from `served` skipped (with skip_before batches before it)."""
        floor, end, probed = stretch
        start = max(self.loader.position, served - self.cfg.guard.skip_before * rows)
        if end > start:
            self.loader.skip(start, end)
        self.guard.skipped(min(start, served), end, rows)
        return {"skipped": [min(start, served), end], "floor_batches": floor, "probed": probed}

    def probe(self, position: int) -> float:
        """The loss of the global batch at `position` (not before the loader's) on the current weights; the
        loader left as it was."""
        saved = self.loader.state_dict()
        if position > self.loader.position:
            self.loader.skip(self.loader.position, position)
        loss = self.forward_loss(next(self.loader))
        self.loader.load_state_dict(saved)
        return loss

    # -- state --------------------------------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """What a checkpoint holds. RNG states are per rank under rank-unique keys: DCP keeps one copy of a
        key saved by several ranks, so a shared key would hand every rank the same state."""
        model_state, optimizer_state = get_state_dict(self.model, self.optimizer)
        return {"model": model_state, "optimizer": optimizer_state, "scheduler": self.scheduler.state_dict(),
                "loader": self.loader.state_dict(), "guard": self.guard.state_dict(),
                "train": {"step": self.step, "world_size": self.world, "lineage": self.lineage},
                f"rng_rank{self.rank}": rng_state()}

    def save(self) -> None:
        """A checkpoint of this step, unless a weight is not finite: saved, it rotated the sound checkpoints away
        and left none that --resume or a rollback could load. Broken weights at the last step stop the run."""
        if self.weights_finite():
            self.checkpoints.save(self.state_dict(), self.step, self.lineage, self.data_identity)
            return
        newest = self.checkpoints.ours.name if self.checkpoints.ours else None
        if self.step == self.cfg.steps:
            raise RunStopped(f"the weights are not finite at the last step, {self.step}: not saved (the newest "
                             f"checkpoint of this run: {newest or 'none'})", 3)
        self.metrics.event("checkpoint_not_saved", self.step, reason="a weight is not finite", newest=newest)

    def weights_finite(self) -> bool:
        """Whether every rank's parameters (its shards of them) are all finite."""
        finite = all(bool(torch.isfinite(p.to_local() if hasattr(p, "to_local") else p).all())
                     for p in self.model.parameters())
        flag = torch.tensor([int(finite)], device=self.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        return bool(flag.item())

    def resume(self) -> None:
        """From the newest checkpoint in the folder that loads (the damaged ones moved aside, each named)."""
        candidates = self.checkpoints.complete()
        if not candidates:
            if aside := self.checkpoints.moved_aside():  # an earlier resume found them all damaged: not a new run
                raise RunStopped(f"no checkpoint in {self.checkpoints.folder} to resume from: {len(aside)} were "
                                 f"moved to {DAMAGED}/ as damaged (each says why in damaged.txt); move one back, or "
                                 f"start a new run in another folder", 2)
            return
        if (loaded := self._restore(candidates, rollback=False)) is None:
            raise RunStopped(f"no checkpoint in {self.checkpoints.folder} loads: each was moved to damaged/", 2)
        log.info("resumed from %s at step %d (%d processes)", loaded, self.step, self.world)
        self.check()  # the parameters loaded are finite too

    def _restore(self, candidates: list[Path], rollback: bool) -> Path | None:
        """The first of `candidates` that loads, loaded; each damaged one before it moved aside."""
        for checkpoint in candidates:
            state = self.state_dict()
            try:
                problem = self.checkpoints.load(checkpoint, state)
            except (UntrustedPath, Unfit) as e:
                raise RunStopped(str(e), 3 if rollback else 2) from None
            if problem is None:
                if not rollback:
                    self._check_data(checkpoint)
                self._apply(checkpoint, state, rollback)
                return checkpoint
            aside = self.checkpoints.move_aside(checkpoint, problem)
            self.metrics.event("checkpoint_damaged", self.step, checkpoint=checkpoint.name, problem=problem,
                               moved_to=str(aside), then="the one before" if checkpoint != candidates[-1] else None)
        return None

    def _check_data(self, checkpoint: Path) -> None:
        """RunStopped unless `checkpoint` was saved by a run on these shards: a state of other shards with the
        same sources, epoch sizes and rows had loaded, and the run went on at positions of another order.
        (A checkpoint saved before the manifest named its data is taken, as before.)"""
        try:
            saved = read_manifest(checkpoint).get("data")
        except (OSError, ValueError) as e:  # read a moment ago to load it: changed since
            raise RunStopped(f"{checkpoint}: {e}", 2) from None
        if saved is not None and saved != self.data_identity:
            raise RunStopped(f"{checkpoint} was saved by a run on other shards (their checksums differ from these): "
                             "resume it on the shards it was trained on, or start a new --run-dir", 2)

    def _apply(self, checkpoint: Path, state: dict, rollback: bool) -> None:
        """A loaded checkpoint's state into the components. A rollback keeps this run's counts, skips and
        rates in the guard and its skips after the checkpoint in the loader; a resume takes them all."""
        set_state_dict(self.model, self.optimizer, model_state_dict=state["model"],
                       optim_state_dict=state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.last_applied = None  # these weights were not trained on it
        try:
            self.loader.load_state_dict(state["loader"], rollback or self.cfg.allow_new_weights, keep_skips=rollback)
        except ValueError as e:
            raise RunStopped(f"{checkpoint}: {e}", 2) from None
        if rollback:
            self.guard.restore_recent(state["guard"])
        else:
            self.guard.load_state_dict(state["guard"])
            self.lineage = state["train"]["lineage"]
        self.step = int(state["train"]["step"])
        self._recompute_lr()
        if f"rng_rank{self.rank}" in state and state["train"]["world_size"] == self.world:
            set_rng_state(state[f"rng_rank{self.rank}"])
        self.checkpoints.ours = checkpoint

    def _recompute_lr(self) -> None:
        """The learning rate of the next step from this run's schedule (--steps may have changed) and the
        guard's factor, computed the way scheduler.step() does, so that an unchanged run resumes bit for bit."""
        self.scheduler.last_epoch -= 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "scheduler.step() before optimizer.step()": intended here
            self.scheduler.step()
