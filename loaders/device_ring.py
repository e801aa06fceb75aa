"""L1, the GPU prefetch: batches go to the device `depth` batches ahead of the one handed out.

On CUDA, a fixed ring of depth + 1 preallocated pinned host buffers; each batch is copied into a
free one, then to the GPU on a side stream, and a CUDA event marks the copy done:
- the consumer's stream waits on that event before the batch is handed out (no host sync);
- a pinned buffer is refilled only after its previous copy's event completed;
- device tensors are allocated on the consumer's stream before the side stream writes them (after
  waiting on an event of that stream), so the caching allocator's bookkeeping stays right without
  `record_stream`.
On CPU there is no copy to overlap: the same ring holds the batches ahead as they are, each in
tensors of its own (a reused buffer would change under a consumer that keeps a batch).
"""

from collections import deque

import numpy as np
import torch


class BatchRing:
    def __init__(self, depth: int, device: torch.device):
        if depth < 0:
            raise ValueError(f"prefetch depth must be 0 or more, got {depth}")
        self.depth, self.device = depth, device
        self.cuda = device.type == "cuda"
        self.pending: deque = deque()  # (batch, copy-done event or None), oldest first
        if self.cuda:
            self.stream = torch.cuda.Stream(device)
            self.pinned: list[dict[str, torch.Tensor] | None] = [None] * (depth + 1)
            self.pinned_done: list[torch.cuda.Event | None] = [None] * (depth + 1)
            self.slot = 0

    def __len__(self) -> int:
        return len(self.pending)

    def push(self, batch: dict[str, np.ndarray]) -> None:
        if not self.cuda:
            self.pending.append(({key: torch.from_numpy(value) for key, value in batch.items()}, None))
            return
        pinned = self._pinned_slot(batch)
        consumer = torch.cuda.current_stream(self.device)
        out = {key: torch.empty(value.shape, dtype=pinned[key].dtype, device=self.device)
               for key, value in batch.items()}
        allocated = torch.cuda.Event()
        allocated.record(consumer)
        with torch.cuda.stream(self.stream):
            self.stream.wait_event(allocated)
            for key, value in batch.items():
                out[key].copy_(pinned[key][:len(value)], non_blocking=True)
            done = torch.cuda.Event()
            done.record(self.stream)
        self.pinned_done[self.slot] = done
        self.slot = (self.slot + 1) % len(self.pinned)
        self.pending.append((out, done))

    def _pinned_slot(self, batch: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        """The next pinned buffer, once its last copy finished, filled with `batch`."""
        if self.pinned_done[self.slot] is not None:
            self.pinned_done[self.slot].synchronize()
        slot = self.pinned[self.slot]
        if slot is None:  # the shapes are the loader's; cu_seqlens can have up to one piece per token
            slot = {key: torch.empty((batch["input_ids"].size + 1,) if key == "cu_seqlens" else value.shape,
                                     dtype=_torch_dtype(value.dtype), pin_memory=True) for key, value in batch.items()}
            self.pinned[self.slot] = slot
        for key, value in batch.items():
            slot[key][:len(value)].numpy()[...] = value
        return slot

    def pop(self) -> dict[str, torch.Tensor]:
        batch, done = self.pending.popleft()
        if done is not None:
            torch.cuda.current_stream(self.device).wait_event(done)
        return batch

    def clear(self) -> None:
        self.pending.clear()


def _torch_dtype(dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.zeros(0, dtype)).dtype
