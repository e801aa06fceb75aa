"""`jobs.extract`: WARC files in, each page's main text out with its URL and site, every other record
counted by reason, damage named, site templates cut, the same rows on any partitioning, and an output
the clean job reads."""

import json

import pyarrow.parquet as pq
import pytest

from prep.ingest.inputs import single_source
from spark_stages.extract import Config, TemplateConfig, run
from tests.spark_stages.conftest import OTHER_CLUSTER, run_module, spark_settings
from tests.web_fixtures import Response, Site, articles, encoded, write_warc

pytestmark = pytest.mark.spark

BIG = Site("docs.example.org", "Debian Notes")  # a site of 12 pages: its template is found
SMALL = Site("blog.example.net", "Small Blog")  # 3 pages: too few to tell its template from its text


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    folder = tmp_path_factory.mktemp("crawl")
    bodies = articles(16)
    big = [Response(f"https://docs.example.org/a/{i}", BIG.page(f"Article {i}", body).encode())
           for i, body in enumerate(bodies[:12])]
    small = [Response(f"https://blog.example.net/p/{i}", SMALL.page(f"Post {i}", body).encode())
             for i, body in enumerate(bodies[12:15])]
    chinese = articles(1, size=3, names=("debian-handbook.zh",))[0]
    data, content_type = encoded(SMALL.page("Notes", chinese), "gbk", "meta")
    small.append(Response("https://blog.example.net/zh", data, content_type))
    write_warc(folder / "a.warc.gz", big[:6] + small)
    write_warc(folder / "b.warc.gz", big[6:])
    damaged = write_warc(folder / "c.warc.gz", [Response("https://other.example.com/x",
                                                         BIG.page("Other", bodies[15]).encode())], crawl_records=False)
    damaged.write_bytes(damaged.read_bytes()[:-40])  # the last record cut short
    return folder, bodies, chinese


@pytest.fixture(scope="module")
def extracted(spark, crawl, tmp_path_factory):
    folder, _, _ = crawl
    out = tmp_path_factory.mktemp("extracted")
    stats = run(spark, single_source(str(folder)), Config(), str(out))
    return out, stats, pq.read_table(out / "docs").to_pylist()


def test_every_record_is_counted_by_outcome_and_reason(extracted):
    out, stats, docs = extracted
    assert stats["pages"] == 16 and stats["extracted"] == 16 and stats["written"] == 16 == len(docs)
    assert stats["skipped"]["request"] == 16 + 2 * 3 + 1 and stats["skipped"]["redirect"] == 2  # one per page and extra
    assert stats["skipped"]["status_404"] == 2 and stats["skipped"]["not_html"] == 2
    assert {"warcinfo", "revisit", "metadata"} <= set(stats["skipped"])
    assert [w["file"] for w in stats["file_warnings"]] == ["c.warc.gz"] and stats["file_errors"] == []
    assert json.loads((out / "stats.json").read_text()) == stats and (out / "report.md").is_file()


def test_documents_carry_the_record_id_the_url_the_site_the_charset_and_the_title(extracted, crawl):
    _, _, docs = extracted
    _, bodies, chinese = crawl
    by_url = {d["url"]: d for d in docs}
    first = by_url["https://docs.example.org/a/0"]
    assert first["id"].startswith("<urn:uuid:") and first["host"] == "docs.example.org"
    assert first["charset"] == "utf-8" and first["content_type"].startswith("text/html") and first["warc_date"]
    assert all(p in first["text"] for p in bodies[0])
    # the headline is the title, not the text (the page's <h1> and <title> name it)
    assert first["title"] == "Article 0" and not first["text"].startswith("Article 0")
    zh = by_url["https://blog.example.net/zh"]
    assert zh["charset"] == "gb18030" and all(p in zh["text"] for p in chinese)


def test_the_template_of_a_site_of_many_pages_is_cut_and_its_articles_kept(extracted, crawl):
    _, stats, docs = extracted
    _, bodies, _ = crawl
    big = [d for d in docs if d["host"] == "docs.example.org"]
    template = BIG.template_lines()
    left = sum(line in d["text"] for d in big for line in template)
    assert len(big) == 12 and left <= 0.05 * len(template) * len(big)  # at least 95% of the template lines cut
    assert all(all(p in d["text"] for p in bodies[int(d["url"].rsplit("/", 1)[1])]) for d in big)
    small = [d for d in docs if d["host"] == "blog.example.net"]
    assert any(SMALL.template_lines()[1] in d["text"] for d in small)  # 4 pages: below min_pages, kept
    assert stats["templates"]["pages_changed"] == 12 and stats["templates"]["lines_removed"] >= 12


def test_the_template_lines_cut_are_written_with_their_site_and_pages(extracted):
    out, stats, _ = extracted
    rows = pq.read_table(out / "templates").to_pylist()
    assert {row["host"] for row in rows} == {"docs.example.org"}  # the small site had none cut
    by_file = {}
    for row in rows:
        by_file.setdefault(row["source"], {})[row["line"]] = row["pages"]
    assert set(by_file) == {"a.warc.gz", "b.warc.gz"}  # the site's 12 pages are in two files, 6 each
    assert all(set(lines) <= set(BIG.template_lines()) for lines in by_file.values())
    assert all(pages == 6 for lines in by_file.values() for pages in lines.values())
    assert sum(pages for lines in by_file.values() for pages in lines.values()) == stats["templates"]["lines_removed"]


def test_the_same_rows_on_another_partitioning_either_template_count_and_no_step(spark, crawl, extracted, tmp_path):
    folder, _, _ = crawl
    _, stats, _ = extracted
    with spark_settings(spark, OTHER_CLUSTER):
        again = run(spark, single_source(str(folder)), Config(partitions=3), str(tmp_path / "again"))
    assert again["checksums"]["docs"].split(":")[0] == stats["checksums"]["docs"].split(":")[0]
    # the template counted by Spark's jobs, not on the driver: the same template, the same rows
    on_spark = run(spark, single_source(str(folder)), Config(templates=TemplateConfig(in_memory_pages=0)),
                   str(tmp_path / "on_spark"))
    assert on_spark["checksums"] == stats["checksums"] and on_spark["templates"] == stats["templates"]
    run(spark, single_source(str(folder)), Config(templates=TemplateConfig(enabled=False)), str(tmp_path / "p"))
    texts = [d["text"] for d in pq.read_table(tmp_path / "p" / "docs").to_pylist() if "docs.example" in d["url"]]
    assert all(BIG.template_lines()[1] in t for t in texts)  # what the step removes, there without it


def test_a_crawl_without_a_page_gives_empty_outputs_on_either_template_count(spark, tmp_path):
    folder = tmp_path / "no-pages"
    folder.mkdir()
    write_warc(folder / "a.warc.gz", [Response("http://example.org/gone", b"<html>Gone</html>", "text/html",
                                               "410 Gone")])
    for in_memory_pages in (100_000, 0):
        out = tmp_path / f"out-{in_memory_pages}"
        cfg = Config(templates=TemplateConfig(in_memory_pages=in_memory_pages))
        stats = run(spark, single_source(str(folder)), cfg, str(out))
        assert stats["pages"] == 0 and stats["written"] == 0 and stats["skipped"]["status_410"] == 1
        assert pq.read_table(out / "docs").num_rows == 0 and stats["file_errors"] == []


def test_pages_without_a_host_are_no_site_and_keep_their_lines(spark, crawl, tmp_path):
    """Found by review: pages whose URL has no host were pooled as one site, so lines unrelated pages share were
    cut from all of them as that site's template."""
    _, bodies, _ = crawl
    folder = tmp_path / "hostless"
    folder.mkdir()
    write_warc(folder / "a.warc.gz", [Response(f"urn:page:{i}", BIG.page(f"Article {i}", body).encode())
                                      for i, body in enumerate(bodies[:6])], crawl_records=False)
    stats = run(spark, single_source(str(folder)), Config(), str(tmp_path / "out"))
    docs = pq.read_table(tmp_path / "out" / "docs").to_pylist()
    assert len(docs) == 6 and {d["host"] for d in docs} == {""} and stats["templates"]["lines_removed"] == 0
    assert all(BIG.template_lines()[1] in d["text"] for d in docs)


def test_pages_that_share_a_record_id_keep_their_own_text(spark, crawl, tmp_path):
    """The same WARC file twice (a crawl fetched again): the template step cuts each page on its own;
    it once joined the cut lines back by record id, giving both copies the lines of both."""
    folder, _, _ = crawl
    twice = tmp_path / "twice"
    twice.mkdir()
    for name in ("a.warc.gz", "again.warc.gz"):
        (twice / name).write_bytes((folder / "a.warc.gz").read_bytes())
    cut, plain = tmp_path / "cut", tmp_path / "plain"
    run(spark, single_source(str(twice)), Config(), str(cut))
    run(spark, single_source(str(twice)), Config(templates=TemplateConfig(enabled=False)), str(plain))
    without = {}
    for d in pq.read_table(plain / "docs").to_pylist():
        without.setdefault(d["id"], set()).add(d["text"])
    docs = pq.read_table(cut / "docs").to_pylist()
    assert len(docs) == 2 * len(without) and all(len(texts) == 1 for texts in without.values())
    for d in docs:
        (whole,) = without[d["id"]]
        assert set(d["text"].split("\n\n")) <= set(whole.split("\n\n")), d["url"]  # lines cut, none added
    assert any(len(d["text"]) < len(next(iter(without[d["id"]]))) for d in docs if "docs.example" in d["url"])


def test_the_clean_job_reads_the_output_and_keeps_the_url(spark, extracted, tmp_path):
    from prep.config import override
    from spark_stages import clean

    out, _, _ = extracted
    (tmp_path / "blocked.txt").write_text("example.net\n")  # blocks blog.example.net, a subdomain
    cfg = override(clean.Config(), {"url_filter": {"blocklists": [str(tmp_path / "blocked.txt")]}})
    stats = clean.run(spark, single_source(str(out / "docs")), cfg, str(tmp_path / "clean"))
    assert stats["input"] == 16 and stats["quarantined"] == 0 and stats["rejected_by_reason"]["url_filter:domain"] == 4
    kept = pq.read_table(tmp_path / "clean" / "docs").to_pylist()
    assert kept and all(json.loads(d["metadata"])["url"].startswith("https://docs.") for d in kept)


def test_the_command_line(crawl, tmp_path):
    folder, _, _ = crawl
    assert "--templates.min_pages" in run_module("extract", "--help").stdout
    missing = run_module("extract", "--input", str(tmp_path / "nope"), "--output", str(tmp_path / "o"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    bad = run_module("extract", "--input", str(folder), "--output", str(tmp_path / "o"), "--extractor", "magic")
    assert bad.returncode == 2 and "extractor must be one of" in bad.stderr


def test_a_task_hands_its_pages_to_the_writer_by_their_text_not_only_their_count(tmp_path, monkeypatch):
    # 512 pages were held whatever their size: 300 WET records of 10 MB grew a task past 7 GB, then failed
    # where a batch's text column passed Arrow's 2 GiB
    import spark_stages.extract as extract
    from prep.extract.pages import page_worker
    from prep.ingest.inputs import InputFile
    from spark_stages.task_outputs import TaskOutputs, prepare

    monkeypatch.setattr(extract, "BATCH_CHARS", 300_000)
    texts = ["\n\n".join(" ".join(sentences) for sentences in articles(8, size=4)) * 12 for _ in range(12)]
    records = b"".join(
        b"WARC/1.0\r\nWARC-Type: conversion\r\nWARC-Record-ID: <urn:uuid:%032d>\r\nWARC-Target-URI: "
        b"https://docs.example.org/%d\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n"
        % (i, i, len(text.encode()), text.encode()) for i, text in enumerate(texts))
    (tmp_path / "crawl.warc.wet").write_bytes(records)
    written, write = [], TaskOutputs.write

    def counted(self, name, batch):
        written.append((name, batch.num_rows, sum(map(len, batch.column("text").to_pylist()))) if name == "docs"
                       else (name, batch.num_rows, 0))
        write(self, name, batch)

    monkeypatch.setattr(TaskOutputs, "write", counted)
    staging = tmp_path / "staging"
    staging.mkdir()
    prepare(staging, extract.OUTPUTS)
    cfg = Config(templates=TemplateConfig(enabled=False))
    with page_worker(cfg) as worker:
        extract.extract_file(0, InputFile(str(tmp_path / "crawl.warc.wet"), "crawl.warc.wet"), cfg, staging, worker)
    docs = [(rows, chars) for name, rows, chars in written if name == "docs"]
    longest = max(map(len, texts))
    assert sum(rows for rows, _ in docs) == 12 and longest > 50_000
    assert len(docs) > 1 and all(chars < 300_000 + longest for _, chars in docs), docs
    assert pq.read_table(staging / "docs").column("text").to_pylist() == [t.strip() for t in texts]


def test_a_files_line_counts_are_written_in_parts_that_sum_to_the_same(crawl, tmp_path, monkeypatch):
    # a file's (site, line) page counts were held until its end: three 10 MB pages of distinct lines held
    # 450 MB of them (1.3 GB at the peak); past MAX_LINE_KEYS they are written out, and their readers sum them
    import pyarrow.compute as pc

    import spark_stages.extract as extract
    from prep.extract.pages import page_worker
    from prep.ingest.inputs import InputFile
    from spark_stages.outputs import SCRATCH
    from spark_stages.task_outputs import prepare

    folder, _, _ = crawl
    summed, held, add = [], [], extract._SiteLines.add

    def counting(self, page):
        add(self, page)
        held.append((extract.MAX_LINE_KEYS, len(self._line_pages)))

    monkeypatch.setattr(extract._SiteLines, "add", counting)
    for name, bound in (("whole", extract.MAX_LINE_KEYS), ("parts", 7)):
        monkeypatch.setattr(extract, "MAX_LINE_KEYS", bound)
        staging = tmp_path / name
        staging.mkdir()
        prepare(staging, extract.OUTPUTS)
        prepare(staging / SCRATCH, extract.SCRATCH_OUTPUTS)
        with page_worker(Config()) as worker:
            extract.extract_file(0, InputFile(str(folder / "a.warc.gz"), "a.warc.gz"), Config(), staging, worker)
        lines = pq.read_table(staging / SCRATCH / "lines")
        counts = lines.group_by(["site", "key"]).aggregate([("pages", "sum")]).sort_by([("site", "ascending"),
                                                                                      ("key", "ascending")])
        summed.append((counts.to_pylist(), pc.sum(lines["pages"]).as_py(), lines.num_rows))
    (whole, total, rows), (parts, parts_total, parts_rows) = summed
    assert whole == parts and total == parts_total and parts_rows > rows > 7
    assert max(n for bound, n in held if bound == 7) < 7 < max(n for bound, n in held if bound != 7)
