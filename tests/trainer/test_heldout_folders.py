"""Where the loop finds held-out shards: given, SHARDS/heldout, or each source's in mixture.json (checked as
the sources' paths are); and the ratio estimator's standard error."""

import json

import numpy as np
import pytest

from schemas.mixture import MixtureError, new_mixture, read_mixture_file
from trainer.heldout import HeldOutConfig, _ratio, heldout_folders


def test_held_out_folders_from_a_folder_a_mixture_or_the_setting(tmp_path):
    (tmp_path / "one" / "heldout").mkdir(parents=True)
    assert heldout_folders(str(tmp_path / "one"), HeldOutConfig()) == {}  # no index.json: not shards
    (tmp_path / "one" / "heldout" / "index.json").write_text("{}")
    assert heldout_folders(str(tmp_path / "one"), HeldOutConfig()) == {"default": str(tmp_path / "one" / "heldout")}
    mixture = new_mixture({"web": ("web", 0.7, 10, 100, "web/heldout"), "code": ("code", 0.3, 5, 50, None)})
    (tmp_path / "mixture.json").write_text(json.dumps(mixture.to_json()))
    assert "heldout" not in mixture.to_json()["sources"]["code"]
    assert read_mixture_file(tmp_path / "mixture.json") == mixture
    assert heldout_folders(str(tmp_path / "mixture.json"), HeldOutConfig()) == {"web": str(tmp_path / "web/heldout")}
    assert heldout_folders(str(tmp_path / "mixture.json"), HeldOutConfig(heldout="elsewhere")) == {
        "default": "elsewhere"}


@pytest.mark.parametrize("heldout", ["../outside", "/etc", 7])
def test_a_mixtures_held_out_path_is_checked_as_its_paths_are(tmp_path, heldout):
    data = new_mixture({"web": ("web", 1, 10, 100)}).to_json()
    data["sources"]["web"]["heldout"] = heldout
    (tmp_path / "mixture.json").write_text(json.dumps(data))
    with pytest.raises(MixtureError, match="heldout"):
        read_mixture_file(tmp_path / "mixture.json")


def test_the_ratio_and_its_standard_error():
    nats, tokens = np.array([10.0, 12.0, 8.0, 11.0]), np.array([4.0, 4.0, 4.0, 4.0])
    ratio, error = _ratio(nats, tokens)
    assert ratio == 41 / 16
    # equal denominators: the standard error of the mean of the per-row ratios
    assert abs(error - np.std(nats / tokens, ddof=1) / np.sqrt(4)) < 1e-12
    assert np.isnan(_ratio(np.array([1.0]), np.array([2.0]))[1])


def test_a_tokenizer_beside_the_shards_whose_ids_do_not_fit_their_vocabulary_is_refused(tmp_path):
    """The tokenizer's hash ties it to index.json, itself a file from elsewhere: a tokenizer holding the id
    5,000 beside an index of vocab_size 1,000 made the held-out step index past its table of bytes per
    token (IndexError) and the benchmarks feed the model ids past its embedding."""
    import hashlib
    from types import SimpleNamespace

    from trainer.heldout import token_bytes, tokenizer_for

    special = ["<|bos|>", "<|eos|>", "<|pad|>"]
    tokenizer = {"version": "1.0", "truncation": None, "padding": None, "normalizer": None,
                 "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None, "decoder": None,
                 "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                                   "normalized": False, "special": True} for i, c in enumerate(special)],
                 "model": {"type": "WordLevel", "vocab": {**{c: i for i, c in enumerate(special)}, "ab": 5000,
                                                          "c": 7}, "unk_token": "c"}}
    (tmp_path / "tokenizer.json").write_text(json.dumps(tokenizer))
    sha = hashlib.sha256((tmp_path / "tokenizer.json").read_text().encode()).hexdigest()
    with pytest.raises(ValueError, match="token id 5000 is past the shards' vocab_size 1000"):
        tokenizer_for(str(tmp_path), SimpleNamespace(tokenizer=""), sha, 1000)
    path = tokenizer_for(str(tmp_path), SimpleNamespace(tokenizer=""), sha, 5001)  # where it fits
    # a table of every id below vocab_size, the ids the tokenizer lacks 0 (its ids need not be contiguous)
    table = token_bytes(path, 5001)
    assert len(table) == 5001 and table[5000] == 2 and table[7] == 1 and table[:3].tolist() == [0, 0, 0]
    assert table.sum() == 3
