import os

import pytest

from prep.ingest.inputs import RESERVED_NAMES, InputError, expand_inputs, expand_sources, input_roots, named_inputs
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
    # relative to the folder the parts share
    assert [f.relative for f in files] == ["a/one.jsonl", "a/sub/two.jsonl.zst", "b/three.parquet"]
    assert [f.relative for f in expand_inputs(str(tmp_path / "a"))] == ["one.jsonl", "sub/two.jsonl.zst"]


def test_two_folders_files_of_one_name_are_two_files_with_ids_apart(tmp_path):
    """Found by review: dump1/part-0.jsonl and dump2/part-0.jsonl were both part-0.jsonl, their documents both
    part-0.jsonl:1, their quarantined records both of file part-0.jsonl."""
    from prep.ingest.readers import read_file

    make(tmp_path, "dump1/part-0.jsonl", "dump2/part-0.jsonl")
    files = expand_inputs(f"{tmp_path / 'dump1'},{tmp_path / 'dump2'}")
    assert [r.id for f in files for r in read_file(f)] == ["dump1/part-0.jsonl:1", "dump2/part-0.jsonl:1"]
    assert expand_inputs([str(tmp_path / "dump1"), str(tmp_path / "dump2")]) == files  # --input given twice


def test_a_glob_through_links_back_to_its_folder_ends_and_reads_each_file_once(tmp_path):
    """Found by review: with two links to '.', glob's ** made 2**40 paths (never ended); with one, each file was
    read 41 times under 41 ids."""
    make(tmp_path, "crawl/a.jsonl", "crawl/sub/b.jsonl")
    for i in range(3):
        os.symlink(".", tmp_path / "crawl" / f"loop{i}")
    os.symlink("..", tmp_path / "crawl" / "sub" / "up")
    os.symlink(tmp_path / "crawl" / "a.jsonl", tmp_path / "crawl" / "sub" / "link.jsonl")  # a link to a file read
    files = expand_inputs(f"{tmp_path}/crawl/**/*.jsonl")
    assert [f.relative for f in files] == ["a.jsonl", "sub/b.jsonl"]
    assert [f.relative for f in expand_inputs(f"{tmp_path}/crawl/**")] == ["a.jsonl", "sub/b.jsonl"]
    assert [f.relative for f in expand_inputs(f"{tmp_path}/c*/s?b/[b]*.jsonl")] == ["crawl/sub/b.jsonl"]
    # what an output is kept apart from: a glob's matches (an output beside them, in their folder, is fine)
    assert input_roots(f"{tmp_path}/crawl/*.jsonl") == [str(tmp_path / "crawl" / "a.jsonl")]


def test_a_path_is_itself_whatever_it_holds(tmp_path):
    """Found by review: data[1].jsonl read data1.jsonl (a glob), a folder crawl[2024] could not be read, and a
    file 'smith, john.jsonl' was split at its comma (reading smith/ and john.jsonl where they existed)."""
    make(tmp_path, "data[1].jsonl", "data1.jsonl", "crawl[2024]/a.jsonl", "smith, john.jsonl", "smith/x.jsonl",
         "john.jsonl")
    assert [f.path for f in expand_inputs(str(tmp_path / "data[1].jsonl"))] == [str(tmp_path / "data[1].jsonl")]
    assert [f.relative for f in expand_inputs(str(tmp_path / "crawl[2024]"))] == ["a.jsonl"]
    assert [f.path for f in expand_inputs(str(tmp_path / "smith, john.jsonl"))] == [str(tmp_path / "smith, john.jsonl")]
    # a value that names no file is still split at its commas, and a pattern where nothing has its name
    assert len(expand_inputs(f"{tmp_path / 'smith'},{tmp_path / 'john.jsonl'}")) == 2
    assert [f.relative for f in expand_inputs(str(tmp_path / "data[0-9].jsonl"))] == ["data1.jsonl"]


def test_a_folders_documents_in_formats_not_read_are_named_in_a_warning(tmp_path, caplog):
    """Found by review: of a folder's 12 files of documents only a.jsonl was read, without a word."""
    make(tmp_path, "a.jsonl", "b.json", "c.ndjson", "d.JSONL", "e.jsonl.bz2", "_part-1.jsonl", "notes.md",
         "_SUCCESS", "stats.json", "part-0.parquet.crc")
    with caplog.at_level("WARNING", logger="prep.ingest.inputs"):
        assert [f.relative for f in expand_inputs(str(tmp_path))] == ["a.jsonl"]
    [warning] = [r.getMessage() for r in caplog.records]
    assert "5 file(s) passed over" in warning
    assert all(name in warning for name in ("b.json", "c.ndjson", "d.JSONL", "e.jsonl.bz2", "_part-1.jsonl"))


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
    make(tmp_path, "elsewhere/other.warc.gz")
    os.symlink(tmp_path / "elsewhere" / "other.warc.gz", tmp_path / "crawl" / "linked.warc.gz")  # a link: read
    os.symlink(tmp_path / "crawl" / "good.warc.gz", tmp_path / "crawl" / "same.warc.gz")  # a file read once
    assert [f.relative for f in expand_inputs(str(tmp_path / "crawl"))] == ["good.warc.gz", "linked.warc.gz"]
    os.symlink(tmp_path / "crawl" / "moved.warc.gz", tmp_path / "crawl" / "dangling.warc.gz")  # says what it is
    with pytest.raises(InputError, match="dangling.warc.gz: a link to nothing .*moved.warc.gz"):
        expand_inputs(str(tmp_path / "crawl"))


def test_globs_match_what_pythons_glob_matches_on_a_tree_without_loops(tmp_path):
    """Found by the day's second review: a pattern ending in / matched files too, and a trailing ** matched no
    file (glob's gives every file under it: _tmp/z.jsonl and _part.jsonl had been read)."""
    import glob

    from prep.ingest.inputs import _glob

    make(tmp_path, "c/a.jsonl", "c/b/x.jsonl", "c/b/_part.jsonl", "c/_tmp/z.jsonl", "c/.h/y.jsonl", "c/notes.txt",
         "c/b/d/e.txt", "c/[x]/w.jsonl")
    for pattern in ("c/*", "c/*/", "c/**", "c/**/", "c/**/*.jsonl", "c/b/**", "c/*/*.jsonl", "c/?/x.jsonl",
                    "c/**/d/*.txt", "c/[ab]*", "**/x.jsonl", "c/[[]x]/*"):
        matched = sorted(map(os.path.normpath, glob.glob(str(tmp_path / pattern), recursive=True)))  # c/ is c
        assert _glob(str(tmp_path / pattern)) == matched, pattern
    assert [f.relative for f in expand_inputs(str(tmp_path / "c" / "**"))] == [
        "[x]/w.jsonl", "_tmp/z.jsonl", "a.jsonl", "b/_part.jsonl", "b/d/e.txt", "b/x.jsonl", "notes.txt"]
