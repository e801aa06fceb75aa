"""Outputs never eat what tokenmill did not write: an output that is an input, inside one or holding one
is refused; only names tokenmill recorded are replaced or removed; one job at a time per output; the
previous output stays readable until the new one is complete. The job checks run before Spark starts."""

import json
import os
import subprocess
import sys

import pytest

from prep.ingest.inputs import expand_inputs
from spark_stages import outputs
from spark_stages.outputs import OWNER_FILE, OutputError, check_apart, claimed_output, commit, staging_dir
from tests.conftest import REPO, write_lines


def run_clean(*args, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jobs.clean", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


@pytest.fixture
def tiny(tmp_path):
    return write_lines(tmp_path / "in" / "tiny.jsonl", [{"text": "A short document of a few words."}], mkdir=True)


def test_an_output_folder_holding_files_tokenmill_did_not_write_is_refused_and_left_alone(tmp_path, tiny):
    """`jobs.clean --input tiny.jsonl --output .` in a folder holding docs/DESIGN.md deleted it."""
    folder = tmp_path / "project"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "DESIGN.md").write_text("the design")
    result = run_clean("--input", str(tiny), "--output", ".", cwd=folder)
    assert result.returncode == 2 and "holds files tokenmill did not write (docs)" in result.stderr
    assert (folder / "docs" / "DESIGN.md").read_text() == "the design"
    assert sorted(p.name for p in folder.iterdir()) == ["docs"]


@pytest.mark.parametrize("layout", ["same", "inside", "holds"])
def test_an_output_that_is_inside_or_holds_an_input_is_refused(tmp_path, layout):
    data = tmp_path / "data"
    source = write_lines(data / "docs.jsonl", [{"text": "A short document of a few words."}], mkdir=True)
    output = {"same": data, "inside": data / "cleaned", "holds": tmp_path}[layout]
    result = run_clean("--input", str(data if layout != "holds" else source), "--output", str(output))
    assert result.returncode == 2 and "--output" in result.stderr and "input" in result.stderr, result.stderr
    assert source.exists() and sorted(p.name for p in data.iterdir()) == ["docs.jsonl"]


def test_a_glob_input_refuses_only_outputs_among_what_it_matches(tmp_path):
    data = tmp_path / "data"
    write_lines(data / "a.jsonl", [{"text": "x"}], mkdir=True)
    (data / "more").mkdir()
    check_apart(str(data / "clean"), [str(data / "a.jsonl")], [str(data / "a.jsonl")])  # beside the files: fine
    with pytest.raises(OutputError, match="lies inside it"):
        check_apart(str(data / "more" / "out"), [str(data / "more")], [])


def test_a_second_job_on_an_output_in_use_is_refused_naming_the_holder(tmp_path, tiny):
    with claimed_output(str(tmp_path / "out")):
        result = run_clean("--input", str(tiny), "--output", str(tmp_path / "out"))
        assert result.returncode == 2
        assert f"is being written by another tokenmill job (pid {os.getpid()})" in result.stderr
    with claimed_output(str(tmp_path / "out")):  # released: the next one takes it
        pass


def test_staging_of_two_jobs_on_one_output_cannot_collide(tmp_path):
    with claimed_output(str(tmp_path / "out")):
        with pytest.raises(OutputError, match="another tokenmill job"):
            with claimed_output(str(tmp_path / "out")):
                pass


def write_output(out, files: dict[str, str], marker="stats.json", stats=None):
    """One job's commit of `files` (name: text) through the staging folder."""
    staging = staging_dir(str(out))
    for name, text in files.items():
        (staging / name).write_text(text)
    commit(staging, str(out), [], stats or {"files": sorted(files)}, marker=marker)


def test_a_rerun_replaces_only_what_tokenmill_wrote_and_removes_its_stale_names(tmp_path):
    out = tmp_path / "shards"
    write_output(out, {"shard-00000.arrow": "a", "shard-00001.arrow": "b"}, marker="index.json")
    (out / "notes.txt").write_text("the user's")  # added to tokenmill's folder later by hand
    write_output(out, {"shard-00000.arrow": "c"}, marker="index.json")  # a smaller rerun
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["index.json", "notes.txt",
                                                                                   "shard-00000.arrow"]
    assert (out / "shard-00000.arrow").read_text() == "c" and (out / "notes.txt").read_text() == "the user's"
    (out / "report.md").write_text("the user's too")  # a name a job writes, but not written by it here
    with pytest.raises(OutputError, match="report.md exist and tokenmill did not write them"):
        write_output(out, {"report.md": "ours"}, marker="index.json")
    assert (out / "report.md").read_text() == "the user's too"


def test_a_folder_holding_only_the_first_records_temporary_is_taken(tmp_path):
    """Found by the kill review of 2026-12-07: a job killed while writing a new folder's first OUT/.tokenmill left
    its temporary alone there, and the rerun refused the folder as holding files tokenmill did not write."""
    out = tmp_path / "clean"
    out.mkdir()
    (out / f".{OWNER_FILE}.tmp").write_text('{"writ')
    assert outputs.claim_folder(out) == set() and not (out / f".{OWNER_FILE}.tmp").exists()
    (out / "theirs.txt").write_text("a user's")
    (out / OWNER_FILE).unlink()
    with pytest.raises(OutputError, match="holds files tokenmill did not write .theirs.txt"):
        outputs.claim_folder(out)


def test_the_previous_output_stays_readable_until_the_new_one_is_complete(tmp_path):
    out = tmp_path / "clean"
    write_output(out, {"report.md": "first"})
    staging = staging_dir(str(out))  # a rerun under way: the first output is still whole
    (staging / "report.md").write_text("second")
    assert (out / "report.md").read_text() == "first" and json.loads((out / "stats.json").read_text())
    commit(staging, str(out), [], {"run": 2})
    assert (out / "report.md").read_text() == "second" and json.loads((out / "stats.json").read_text()) == {"run": 2}


def test_a_commit_killed_midway_leaves_every_name_recorded_for_the_rerun(tmp_path, monkeypatch):
    out = tmp_path / "clean"
    write_output(out, {"a.md": "1", "b.md": "1"})
    staging = staging_dir(str(out))
    for name in ("a.md", "b.md", "c.md"):
        (staging / name).write_text("2")
    real_replace, moved = outputs.os.replace, []

    def dies_on_the_third(src, dst):
        if len(moved) == 3:
            raise KeyboardInterrupt  # the process is killed between two renames
        moved.append(dst)
        real_replace(src, dst)

    monkeypatch.setattr(outputs.os, "replace", dies_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        commit(staging, str(out), [], {"run": 2})
    monkeypatch.setattr(outputs.os, "replace", real_replace)
    assert not (out / "stats.json").exists()  # incomplete, and says so
    assert {"a.md", "b.md", "c.md", "stats.json"} <= set(json.loads((out / OWNER_FILE).read_text())["written"])
    write_output(out, {"a.md": "3"})  # the rerun takes the folder back and leaves no stale name
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["a.md", "stats.json"]


@pytest.mark.parametrize("content", ["[" * 100_000 + "]" * 100_000, '{"written": 5}', "not json"])
def test_a_damaged_ownership_file_is_one_line_naming_it(tmp_path, content):
    from spark_stages.outputs import written_names

    (tmp_path / OWNER_FILE).write_text(content)
    with pytest.raises(OutputError, match=r"\.tokenmill is damaged .*remove the folder"):
        written_names(tmp_path)


def test_an_ownership_file_that_is_a_fifo_or_a_link_is_damage_not_waited_on_or_followed(tmp_path):
    import os

    from spark_stages.outputs import written_names

    os.mkfifo(tmp_path / OWNER_FILE)  # its open waited for a writer for ever
    with pytest.raises(OutputError, match="is damaged .*not a regular file"):
        written_names(tmp_path)
    (tmp_path / OWNER_FILE).unlink()
    (tmp_path / "theirs.json").write_text('{"written": ["stats.json"]}')
    (tmp_path / OWNER_FILE).symlink_to(tmp_path / "theirs.json")
    with pytest.raises(OutputError, match="is damaged"):
        written_names(tmp_path)


def test_an_output_that_is_a_url_is_one_line_before_spark_and_a_relative_one_is_made_absolute(
        tmp_path, tiny, monkeypatch, capsys):
    """Found by review: `--output s3://bucket/out` started Spark, failed in a task (pyarrow: Missing bucket name)
    and left ./s3:/bucket/out behind; `--output run:1`, relative, was read by pyarrow as a URL in the tasks."""
    from spark_stages import clean
    from spark_stages.runner import local_output, run_stage

    monkeypatch.chdir(tmp_path)
    assert run_stage(clean.STAGE, ["--input", str(tiny), "--output", "s3://bucket/out"]) == 2
    assert "not a URL" in capsys.readouterr().err and sorted(p.name for p in tmp_path.iterdir()) == ["in"]
    assert local_output("run:1") == str(tmp_path / "run:1")


def test_the_extract_job_refuses_files_that_are_no_crawl(tmp_path, tiny, capsys):
    """Found by review: a JSON Lines file of 1,000 documents was one record quarantined as no WARC record, exit 0.
    A file beside crawls (a collection's pages.jsonl) is one quarantined record, as before (second review)."""
    from spark_stages import extract
    from spark_stages.runner import run_stage
    from tests.web_fixtures import write_warc

    assert run_stage(extract.STAGE, ["--input", str(tiny.parent), "--output", str(tmp_path / "out")]) == 2
    assert "tiny.jsonl: no web crawl" in capsys.readouterr().err and not (tmp_path / "out").exists()
    write_warc(tiny.parent / "crawl.warc.gz", [])
    extract.check(extract.Config(), {"default": expand_inputs(str(tiny.parent))})  # taken


@pytest.mark.parametrize("name", ["/abs", "../notes", ".", "..", "", "a/b", "x\0y", OWNER_FILE, ".tokenmill.lock"])
def test_a_recorded_name_that_is_not_one_of_the_folders_own_is_damage(tmp_path, name):
    """Found by the review of 2026-12-08: replace_layout removed whatever path a folder's record named, so a record
    from elsewhere naming "/home/me/project" or "../notes" had a pipeline of named sources delete it."""
    from spark_stages.outputs import replace_layout, written_names

    victim = tmp_path / "notes"
    victim.mkdir()
    (victim / "mine.txt").write_text("the user's own")
    out = tmp_path / "out" / "clean"
    out.mkdir(parents=True)
    recorded = str(victim) if name == "/abs" else name
    (out / OWNER_FILE).write_text(json.dumps({"written": ["web", recorded]}))
    with pytest.raises(OutputError, match=r"\.tokenmill is damaged .*not a name of the folder's own"):
        written_names(out)
    with pytest.raises(OutputError):
        replace_layout(out, {"web"})
    assert (victim / "mine.txt").read_text() == "the user's own"


def test_a_layout_is_not_replaced_under_another_job_or_through_a_link(tmp_path):
    """Found by the review of 2026-12-08: a pipeline of named sources cleared OUT/clean while `jobs.clean --output
    OUT/clean` was writing it (its staging and its committed docs went), and cleared another run's output through
    an OUT/clean that was a link to it."""
    from spark_stages.outputs import record_written, replace_layout

    other = tmp_path / "other-run" / "clean"
    record_written(other, ["docs"])
    (other / "docs").mkdir()
    holder = subprocess.Popen(  # another job writes it, until told to stop
        [sys.executable, "-c", "import sys; from spark_stages.outputs import claimed_output\n"
         f"with claimed_output({str(other)!r}):\n    print('held', flush=True)\n    sys.stdin.read()"],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputError, match=f"being written by another tokenmill job \\(pid {holder.pid}\\)"):
            replace_layout(other, {"web"})
    finally:
        holder.communicate("", timeout=60)
    assert (other / "docs").is_dir()
    with claimed_output(str(other)):  # the job's own folder (a split of the shards job's OUT): replaced
        replace_layout(other, {"docs", "web"})
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "clean").symlink_to(other)
    with pytest.raises(OutputError, match="is a link"):
        replace_layout(tmp_path / "out" / "clean", {"web"})
    assert (other / "docs").is_dir()
    replace_layout(other, {"web"})  # no job on it, no link: the earlier layout goes and the sources are recorded
    assert not (other / "docs").exists() and json.loads((other / OWNER_FILE).read_text())["written"] == ["web"]
