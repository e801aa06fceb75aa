import os

import pytest

from prep.ingest.inputs import RESERVED_NAMES, InputError, expand_inputs, expand_sources, named_inputs
from report.run import RUN_FILE, SETTINGS_FILE
from report.write import COMPARE_FILE, REPORT_FILE
from schemas.mixture import MIXTURE_FILE
from spark_stages.shards import HELDOUT


def make(tmp_path, *names):
    for name in names:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"text": "x"}\n')


def test_directories_globs_and_commas(tmp_path):
    make(tmp_path, "a/one.jsonl", "a/sub/two.jsonl.zst", "b/three.parquet", "a/_SUCCESS", "a/.hidden.jsonl",
         "a/notes.md")
    files = expand_inputs(f"{tmp_path / 'a'},{tmp_path / 'b'}/*.parquet")
    assert [f.relative for f in files] == ["one.jsonl", "sub/two.jsonl.zst", "three.parquet"]


def test_same_file_named_twice_is_read_once(tmp_path):
    make(tmp_path, "x.jsonl")
    assert len(expand_inputs(f"{tmp_path / 'x.jsonl'},{tmp_path}")) == 1


@pytest.mark.parametrize("spec,message", [("missing_dir", "no such file"), ("*.nothing", "matches no readable file")])
def test_nothing_found_is_an_error_naming_the_part(tmp_path, spec, message):
    with pytest.raises(InputError, match=message):
        expand_inputs(str(tmp_path / spec))


def test_unknown_format_is_an_error(tmp_path):
    (tmp_path / "data.csv").write_text("a,b\n")
    with pytest.raises(InputError, match="unknown format"):
        expand_inputs(str(tmp_path / "data.csv"))


def test_sample_corpus_ids_are_unique(sample_dir):
    from prep.ingest.readers import read_file

    ids = [r.id for f in expand_inputs(str(sample_dir)) for r in read_file(f)]
    assert len(ids) == len(set(ids)) > 3000


def test_named_inputs_keep_the_order_they_were_named_in(tmp_path):
    for name in ("b", "a", "d=1"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "x.jsonl").write_text('{"text": "t"}\n')
    named = named_inputs([f"zh={tmp_path}/b", f"web={tmp_path}/a"])
    assert named == {"zh": f"{tmp_path}/b", "web": f"{tmp_path}/a"} and list(named) == ["zh", "web"]
    sources = expand_sources(named)
    assert list(sources) == ["zh", "web"] and sources["zh"] == expand_inputs(str(tmp_path / "b"))
    with pytest.raises(InputError, match="source 'web': .*no such file"):
        expand_sources({"web": str(tmp_path / "missing")})
    # bare paths (an "=" after a slash is part of the path) are one unnamed input
    assert named_inputs([str(tmp_path / "a"), f"{tmp_path}/d=1"]) is None
    with pytest.raises(InputError, match="name every --input"):
        named_inputs([f"web={tmp_path}/a", str(tmp_path / "b")])


@pytest.mark.parametrize("name", ["mixture.json", "heldout", "a" * 101])
def test_a_source_named_as_tokenmills_own_files_or_too_long_is_refused(tmp_path, name):
    """Found by review: `--input mixture.json=PATH` ran every stage, then failed writing OUT/shards/mixture.json
    over the source's folder; a source `heldout` was left out of the report (a shards folder's held-out rows);
    a name of 300 characters failed making its folder, after the folders before it were written."""
    with pytest.raises(InputError, match=f"source '{name[:60]}'"):
        named_inputs([f"web={tmp_path}", f"{name}={tmp_path}"])
    # what the outputs name beside a source's folder (or a split's)
    assert {MIXTURE_FILE, HELDOUT, RUN_FILE, SETTINGS_FILE, REPORT_FILE, COMPARE_FILE} <= set(RESERVED_NAMES)


def test_a_fifo_or_a_device_under_a_readable_name_is_an_error_naming_it(tmp_path):
    # a folder unpacked from elsewhere: a FIFO's open waited forever, and a link to /dev/zero was read forever
    make(tmp_path, "crawl/good.warc.gz")
    os.mkfifo(tmp_path / "crawl" / "evil.warc.gz")
    with pytest.raises(InputError, match="evil.warc.gz: not a regular file"):
        expand_inputs(str(tmp_path / "crawl"))
    os.unlink(tmp_path / "crawl" / "evil.warc.gz")
    os.symlink("/dev/zero", tmp_path / "crawl" / "zero.warc")
    with pytest.raises(InputError, match="zero.warc: not a regular file"):
        expand_inputs(str(tmp_path / "crawl" / "*.warc*"))
    os.unlink(tmp_path / "crawl" / "zero.warc")
    os.symlink(tmp_path / "crawl" / "good.warc.gz", tmp_path / "crawl" / "linked.warc.gz")  # a link to a file: read
    assert [f.relative for f in expand_inputs(str(tmp_path / "crawl"))] == ["good.warc.gz", "linked.warc.gz"]
    os.symlink(tmp_path / "crawl" / "moved.warc.gz", tmp_path / "crawl" / "dangling.warc.gz")  # says what it is
    with pytest.raises(InputError, match="dangling.warc.gz: a link to nothing .*moved.warc.gz"):
        expand_inputs(str(tmp_path / "crawl"))
