"""A Llama-style decoder for the training loop (trainer/loop.py): RMSNorm, rotary embeddings, SwiGLU,
grouped-query attention.

Packed rows hold several documents; attention never crosses a document boundary:
- on CPU (and wherever flex_attention is unavailable), SDPA with a block-diagonal causal mask built
  from the batch's document ids;
- on CUDA, flex_attention, compiled (uncompiled it is a slow reference that materializes the
  scores), with the same rule as a block mask (document-aware, sparse: blocks across documents are
  skipped, not computed and masked).
"""

import functools
import math
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


@dataclass(frozen=True)
class ModelConfig:
    dim: int = 64  # width of the residual stream
    n_layers: int = 2  # decoder blocks
    n_heads: int = 4  # query heads
    n_kv_heads: int = 2  # key/value heads (grouped-query attention: n_heads is a multiple)
    ffn_dim: int = 192  # SwiGLU hidden width
    vocab_size: int = 0  # set from the shards' embedding_size (a multiple of 128)
    rope_theta: float = 500_000.0  # Llama 3's rotary base
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads


PRESETS = {
    "tiny": ModelConfig(),
    # GPT-2 small's width and depth (85M parameters outside the embeddings, 124M with its 50K vocabulary)
    "125m": ModelConfig(dim=768, n_layers=12, n_heads=12, n_kv_heads=4, ffn_dim=2048),
    "1b": ModelConfig(dim=2048, n_layers=16, n_heads=32, n_kv_heads=8, ffn_dim=8192),  # Llama 3.2 1B's shape
}


def preset(name: str, vocab_size: int) -> ModelConfig:
    return replace(PRESETS[name], vocab_size=vocab_size)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # normalize in fp32 (bf16's 8 mantissa bits lose the mean of squares), return in x's dtype
        normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return (normed * self.weight.float()).type_as(x)


def rotary(position_ids: torch.Tensor, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin [B, S, head_dim / 2] at each token's position inside its document."""
    inverse = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=position_ids.device, dtype=torch.float32) / head_dim)
    angles = position_ids.float()[..., None] * inverse
    return angles.cos(), angles.sin()


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [B, H, S, D]: rotate each (first half, second half) pair."""
    first, second = x.float().chunk(2, dim=-1)
    cos, sin = cos[:, None], sin[:, None]
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1).type_as(x)


def document_ids(cu_seqlens: torch.Tensor, batch: int, seq_len: int) -> torch.Tensor:
    """[B, S] the index of the document piece each token belongs to (pieces from cu_seqlens)."""
    flat = torch.arange(batch * seq_len, device=cu_seqlens.device)
    return (torch.searchsorted(cu_seqlens.long(), flat, right=True) - 1).view(batch, seq_len)


class DocumentMask:
    """Causal attention inside each document piece, built once per batch and shared by every layer."""

    def __init__(self, cu_seqlens: torch.Tensor, batch: int, seq_len: int, use_flex: bool):
        docs = document_ids(cu_seqlens, batch, seq_len)
        self.use_flex = use_flex
        if use_flex:
            from torch.nn.attention.flex_attention import create_block_mask

            def same_document_causal(b, _h, q, k):
                return (docs[b, q] == docs[b, k]) & (k <= q)

            self.block_mask = create_block_mask(same_document_causal, batch, None, seq_len, seq_len,
                                                device=cu_seqlens.device)
        else:
            causal = torch.ones(seq_len, seq_len, dtype=torch.bool, device=docs.device).tril()
            self.dense = ((docs[:, :, None] == docs[:, None, :]) & causal)[:, None]  # [B, 1, S, S]

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if self.use_flex:
            return _compiled_flex_attention()(q, k, v, block_mask=self.block_mask, enable_gqa=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.dense, enable_gqa=True)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.wq = nn.Linear(cfg.dim, cfg.n_heads * cfg.head_dim, bias=False)
        self.wkv = nn.Linear(cfg.dim, 2 * cfg.n_kv_heads * cfg.head_dim, bias=False)
        self.wo = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: DocumentMask) -> torch.Tensor:
        batch, seq_len, _ = x.shape
        q = self.wq(x).view(batch, seq_len, self.cfg.n_heads, self.cfg.head_dim).transpose(1, 2)
        k, v = self.wkv(x).view(batch, seq_len, 2, self.cfg.n_kv_heads, self.cfg.head_dim).permute(2, 0, 3, 1, 4)
        out = mask.attend(apply_rotary(q, cos, sin), apply_rotary(k, cos, sin), v)
        return self.wo(out.transpose(1, 2).reshape(batch, seq_len, -1))


class FeedForward(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.gate_up = nn.Linear(cfg.dim, 2 * cfg.ffn_dim, bias=False)
        self.down = nn.Linear(cfg.ffn_dim, cfg.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.attention_norm, self.attention = RMSNorm(cfg.dim, cfg.norm_eps), Attention(cfg)
        self.ffn_norm, self.ffn = RMSNorm(cfg.dim, cfg.norm_eps), FeedForward(cfg)

    def forward(self, x, cos, sin, mask):
        x = x + self.attention(self.attention_norm(x), cos, sin, mask)
        return x + self.ffn(self.ffn_norm(x))


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        if cfg.vocab_size <= 0 or cfg.n_heads % cfg.n_kv_heads or cfg.dim % cfg.n_heads:
            raise ValueError(f"bad model shape: {cfg}")
        self.cfg = cfg
        self.embedding = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)

    def init_weights(self, generator: torch.Generator | None = None) -> None:
        """Normal(0, 0.02), output projections scaled by depth (GPT-2); run after meta-device creation."""
        for name, p in self.named_parameters():
            if p.dim() == 1:
                nn.init.ones_(p)
                continue
            std = 0.02 / math.sqrt(2 * self.cfg.n_layers) if name.endswith(("wo.weight", "down.weight")) else 0.02
            nn.init.trunc_normal_(p, std=std, a=-3 * std, b=3 * std, generator=generator)

    def forward(self, input_ids: torch.Tensor, position_ids: torch.Tensor, cu_seqlens: torch.Tensor,
                labels: torch.Tensor | None = None, loss_chunk_tokens: int = 0,
                use_flex: bool | None = None) -> torch.Tensor:
        """Logits [B, S, vocab]; with `labels`, each row's summed loss of the tokens whose label is not
        -100 instead, [B] (see cross_entropy_rows). use_flex: flex_attention (default on CUDA) or SDPA
        with a mask."""
        batch, seq_len = input_ids.shape
        if use_flex is None:
            use_flex = input_ids.is_cuda and _flex_available()
        mask = DocumentMask(cu_seqlens, batch, seq_len, use_flex)
        cos, sin = rotary(position_ids, self.cfg.head_dim, self.cfg.rope_theta)
        x = self.embedding(input_ids)
        for block in self.blocks:
            x = block(x, cos, sin, mask)
        if labels is None:
            return self.output(self.norm(x))
        return cross_entropy_rows(self.norm(x), self.output.weight, labels, loss_chunk_tokens)

    def flops_per_token(self, seq_len: int) -> float:
        """torchtitan's count: 6 per non-embedding parameter, plus attention's 12 * layers * heads *
        head_dim * seq_len (forward and backward)."""
        params = sum(p.numel() for p in self.parameters()) - self.embedding.weight.numel()
        return 6 * params + 12 * self.cfg.n_layers * self.cfg.n_heads * self.cfg.head_dim * seq_len


def cross_entropy_rows(hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor,
                       chunk_tokens: int = 0) -> torch.Tensor:
    """Cross-entropy in fp32 summed over each row, [B] (labels of -100 ignored): per row, so that a
    mixture's loss can be told apart by source. With chunk_tokens > 0 the logits are made that many
    tokens at a time and made again in backward, so the [tokens, vocab] matrix never exists whole (1 GB
    in fp32 for 8K tokens of a 32K vocabulary, 17 GB for 32K tokens of 128K): less memory for one more
    pass of the output layer (~20% slower for the tiny model on CPU)."""
    rows = labels.shape[0]
    hidden, labels = hidden.flatten(0, 1), labels.flatten()
    if chunk_tokens <= 0:
        return _token_losses(hidden, weight, labels).view(rows, -1).sum(-1)
    losses = [checkpoint(_token_losses, h, weight, y, use_reentrant=False)
              for h, y in zip(hidden.split(chunk_tokens), labels.split(chunk_tokens))]
    return torch.cat(losses).view(rows, -1).sum(-1)


def _token_losses(hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(F.linear(hidden, weight).float(), labels, ignore_index=-100, reduction="none")


@functools.cache
def _compiled_flex_attention():
    """flex_attention compiled once (uncompiled it runs a slow reference implementation)."""
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=False)


@functools.cache
def _flex_available() -> bool:
    try:
        from torch.nn.attention.flex_attention import flex_attention  # noqa: F401
    except ImportError:
        return False
    return True
