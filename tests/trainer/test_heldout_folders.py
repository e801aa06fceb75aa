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
