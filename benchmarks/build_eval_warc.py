"""trafilatura's own evaluation pages (adbar/trafilatura: tests/evaldata.json, the pages in tests/cache/
and tests/eval/) packed into a WARC file as a crawl would hold them: one gzipped response record per
page (HTTP 200, text/html, no charset declared: the page's own <meta> or detection decides), after its
request record. The snippets each page must and must not yield go to a JSON file beside it.

    python -m benchmarks.build_eval_warc --tests TRAFILATURA/tests --output /tmp/evalwarc [--copies N]

`--copies N` writes N files of the pages (eval.warc.gz, eval-1.warc.gz, ...: other record ids, the same
URLs on the host copyK.HOST), for timing the job on more than a second of work: a task reads a file, as Common
Crawl's thousands of files are read.
"""

import argparse
import json
import uuid
from io import BytesIO
from pathlib import Path


def pages(tests: Path) -> dict[str, tuple[bytes, dict]]:
    """{url: (the page's bytes, its annotation)} of every page whose file is there."""
    annotations = json.loads((tests / "evaldata.json").read_text(encoding="utf-8"))
    found = {}
    for url, item in sorted(annotations.items()):
        for folder in ("cache", "eval"):
            path = tests / folder / item["file"]
            if path.is_file():
                found[url] = (path.read_bytes(), item)
                break
    return found


def write(found: dict[str, tuple[bytes, dict]], out: Path, copies: int = 1) -> list[Path]:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for copy in range(copies):
        path = out / ("eval.warc.gz" if copy == 0 else f"eval-{copy}.warc.gz")
        with open(path, "wb") as f:
            writer = WARCWriter(f, gzip=True)
            for url, (body, _) in found.items():
                target = url if copy == 0 else url.replace("://", f"://copy{copy}.", 1)  # each copy a site of its own
                request = StatusAndHeaders("GET / HTTP/1.1", [("Host", "example")], is_http_request=True)
                writer.write_record(writer.create_warc_record(target, "request", http_headers=request,
                                                              payload=BytesIO(b"")))
                headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
                record = writer.create_warc_record(target, "response", payload=BytesIO(body), http_headers=headers)
                stable = uuid.uuid5(uuid.NAMESPACE_URL, target)  # the same ids every time it is built
                record.rec_headers.replace_header("WARC-Record-ID", f"<urn:uuid:{stable}>")
                writer.write_record(record)
        paths.append(path)
    (out / "annotations.json").write_text(json.dumps({url: item for url, (_, item) in found.items()},
                                                     ensure_ascii=False), encoding="utf-8")
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tests", required=True, help="trafilatura's tests/ folder")
    parser.add_argument("--output", required=True)
    parser.add_argument("--copies", type=int, default=1)
    args = parser.parse_args()
    found = pages(Path(args.tests))
    paths = write(found, Path(args.output), args.copies)
    size = paths[0].stat().st_size / 1e6
    print(f"{args.output}: {len(found)} pages in each of {len(paths)} files, {size:.1f} MB each")


if __name__ == "__main__":
    main()
