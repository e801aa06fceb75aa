"""The decoder: attention stays inside each document of a packed row, the presets have their sizes,
and (on a GPU) flex_attention and the dense-mask path agree."""

import pytest
import torch

from trainer.model import PRESETS, Transformer, document_ids, preset


def tiny_model_and_batch():
    """The tiny model, seeded, and random token ids laid out as packed_row()."""
    torch.manual_seed(0)
    model = Transformer(preset("tiny", 1024))
    model.init_weights()
    return model, torch.randint(0, 1024, (2, 256)), *packed_row()


def packed_row():
    """One row of two documents (100 and 156 tokens), another of three."""
    cu = torch.tensor([0, 100, 256, 300, 400, 512], dtype=torch.int32)
    pieces = [100, 156, 44, 100, 112]
    position_ids = torch.cat([torch.arange(n) for n in pieces]).view(2, 256)
    return cu, position_ids


def test_document_ids_follow_cu_seqlens():
    cu, _ = packed_row()
    docs = document_ids(cu, 2, 256)
    assert docs[0, 99] == 0 and docs[0, 100] == 1 and docs[1, 0] == 2 and docs[1, 255] == 4


def test_attention_never_crosses_a_document_boundary():
    model, ids, cu, position_ids = tiny_model_and_batch()
    changed = ids.clone()
    changed[0, :100] = 7  # rewrite the first document only
    with torch.no_grad():
        before, after = model(ids, position_ids, cu), model(changed, position_ids, cu)
    assert torch.equal(before[0, 100:], after[0, 100:]) and torch.equal(before[1], after[1])
    assert not torch.allclose(before[0, :100], after[0, :100])
    # and inside a document it is causal: changing its last token changes nothing before it
    changed = ids.clone()
    changed[0, 99] = (ids[0, 99] + 1) % 1024
    with torch.no_grad():
        assert torch.equal(model(changed, position_ids, cu)[0, :99], before[0, :99])


def test_the_chunked_loss_is_the_loss_of_the_whole_logits_per_row_with_the_same_gradients():
    model, ids, cu, position_ids = tiny_model_and_batch()
    labels = torch.roll(ids, -1, 1)
    labels[0, 99] = labels[0, 255] = -100
    whole = torch.nn.functional.cross_entropy(model(ids, position_ids, cu).flatten(0, 1), labels.flatten(),
                                              ignore_index=-100, reduction="sum")
    whole.backward()
    expected = model.output.weight.grad.clone()
    model.zero_grad()
    rows = model(ids, position_ids, cu, labels=labels, loss_chunk_tokens=96)
    assert rows.shape == (ids.shape[0],)
    with torch.no_grad():
        first_row = torch.nn.functional.cross_entropy(model(ids, position_ids, cu)[0], labels[0], ignore_index=-100,
                                                      reduction="sum")
    assert rows[0].item() == pytest.approx(first_row.item(), rel=1e-5)
    chunked = rows.sum()
    chunked.backward()
    assert chunked.item() == pytest.approx(whole.item(), rel=1e-5)
    assert torch.allclose(model.output.weight.grad, expected, rtol=1e-4, atol=1e-6)


def test_presets_have_their_sizes():
    with torch.device("meta"):
        sizes = {name: Transformer(preset(name, 32768)) for name in PRESETS}
    non_embedding = {name: sum(p.numel() for p in m.parameters()) - 2 * 32768 * m.cfg.dim for name, m in sizes.items()}
    # GPT-2 small (124M with its 50K vocabulary) has 85M parameters outside the embeddings
    assert 70e6 < non_embedding["125m"] < 100e6 and 0.9e9 < non_embedding["1b"] < 1.1e9
    assert sizes["1b"].flops_per_token(4096) > 6 * non_embedding["1b"]


@pytest.mark.compile
def test_compiled_flex_attention_and_the_dense_mask_agree_on_cpu():
    """The training path on CUDA (flex_attention compiled, with the block mask) against SDPA with the dense
    mask, here compiled for the CPU: the same logits."""
    torch.manual_seed(0)
    model = Transformer(preset("tiny", 1024))
    model.init_weights()
    cu, position_ids = packed_row()
    ids = torch.randint(0, 1024, (2, 256))
    with torch.no_grad():
        flex = model(ids, position_ids, cu, use_flex=True)
        dense = model(ids, position_ids, cu, use_flex=False)
    assert torch.allclose(flex, dense, atol=1e-4, rtol=1e-4), (flex - dense).abs().max()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="flex_attention runs on CUDA here")
def test_flex_attention_and_the_dense_mask_give_the_same_loss():
    torch.manual_seed(0)
    model = Transformer(preset("tiny", 1024)).cuda().to(torch.bfloat16)
    model.init_weights()
    cu, position_ids = packed_row()
    ids = torch.randint(0, 1024, (2, 256), device="cuda")
    with torch.no_grad():
        flex = model(ids, position_ids.cuda(), cu.cuda(), use_flex=True).float()
        dense = model(ids, position_ids.cuda(), cu.cuda(), use_flex=False).float()
    loss = [torch.nn.functional.cross_entropy(x.flatten(0, 1)[:-1], ids.flatten()[1:]) for x in (flex, dense)]
    assert loss[0].item() == pytest.approx(loss[1].item(), rel=1e-2)
