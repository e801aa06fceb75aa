"""jobs.evaluate loads a checkpoint only after the check --resume makes: one another user owns, or others can
write, is refused with one line naming it, and nothing of it is read (its metadata is a pickle: code)."""

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.shard_fixtures import write_text_shards
from tests.trainer.test_checkpoints import planted_checkpoint


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shards")
    write_text_shards(folder, seq_len=256)
    return folder


@pytest.mark.parametrize("planted_by", ["another user's folder", "another user's file", "others-write"])
def test_evaluate_refuses_a_checkpoint_that_is_not_the_users_alone(shards, sample_dir, tmp_path, request, planted_by):
    marker = tmp_path / "ran"
    checkpoint = planted_checkpoint(tmp_path / "run", marker)
    if planted_by == "others-write":
        (checkpoint / ".metadata").chmod(0o666)
        refused = checkpoint / ".metadata"
    else:
        uid = request.getfixturevalue("other_user").uid
        refused = checkpoint if planted_by == "another user's folder" else checkpoint / ".metadata"
        os.chown(refused, uid, uid)
    done = subprocess.run(
        [sys.executable, "-m", "jobs.evaluate", "--run-dir", str(tmp_path / "run"), "--shards", str(shards),
         "--tokenizer", str(shards / "tokenizer.json"), "--input", str(sample_dir / "debian-reference.en*")],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert not marker.exists()  # the pickle was never read
    assert done.returncode != 0 and done.stdout == "", done.stdout
    assert len(done.stderr.strip().splitlines()) == 1 and str(refused) in done.stderr, done.stderr[-3000:]


@pytest.mark.parametrize("settings, message", [
    # found by review (2026-12-07): tracebacks, an IndexError after no document was read, and records
    # quarantined without a word
    ({"input": ""}, "--input is required"),
    ({"input": "/nonexistent/held-out.jsonl"}, "no such file or directory"),
    ({"tokenizer": "/nonexistent/tokenizer.json"}, "No such file or directory"),
    ({"shards": "/nonexistent/shards"}, "index.json: missing"),
])
def test_inputs_that_cannot_be_evaluated_stop_it_in_one_line(shards, sample_dir, tmp_path, settings, message):
    from trainer.evaluate import EvalConfig, EvalStopped, evaluate

    base = {"run_dir": str(tmp_path / "run"), "shards": str(shards), "tokenizer": str(shards / "tokenizer.json"),
            "input": str(sample_dir / "debian-reference.en*")}
    with pytest.raises(EvalStopped, match=message):
        evaluate(EvalConfig(**{**base, **settings}))


def test_records_that_are_no_document_are_counted_and_none_at_all_is_an_error(shards, tmp_path, capsys):
    from trainer.evaluate import EvalConfig, EvalStopped, evaluate

    held_out = tmp_path / "held-out.jsonl"
    held_out.write_bytes(b'{"id": 1}\n{"id": 2, "text": 5}\n\xff\xfe\n')
    with pytest.raises(EvalStopped, match=r"no document read from .* \(3 records left out\)"):
        evaluate(EvalConfig(run_dir=str(tmp_path), shards=str(shards), tokenizer=str(shards / "tokenizer.json"),
                            input=str(held_out)))
    err = capsys.readouterr().err
    assert "1 records left out: missing field 'text'" in err and "invalid UTF-8" in err, err


def test_a_model_that_is_no_preset_is_one_line_and_exit_code_2(shards, tmp_path):
    done = subprocess.run([sys.executable, "-m", "jobs.evaluate", "--run-dir", str(tmp_path), "--shards", str(shards),
                           "--model", "../x", "--input", "x.jsonl"], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "jobs.evaluate: error: --model: model must be one of tiny, 125m, 1b, got '../x'"], done.stderr
