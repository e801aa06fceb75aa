"""The reports opened in headless Chromium, as a person opens them from a file: nothing runs but the
report's own script (no title changed, no dialog, no console message, no policy violation), and the live
DOM holds what the outputs hold: the funnel's counts, the sampled ids, the hostile documents as text."""

import json

import pytest

from report import ReportConfig, write_comparison, write_report
from tests.report import corpus
from tests.report.browser import Browser, chromium
from tests.report.expected import sample_by_reason, stats

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(chromium() is None, reason="Chromium is not installed (make browser installs it)")]


@pytest.fixture(scope="module")
def browser():
    with Browser() as opened:
        yield opened


def opened(browser, path) -> None:
    """Loads a report; it must load clean and run its own script (which the Content Security Policy would
    block if its hash were wrong)."""
    loaded = browser.open(path)
    assert loaded.errors() == []
    assert browser.evaluate("document.body.dataset.reportReady") == "1"
    assert browser.evaluate("document.scripts.length") == 1
    assert browser.evaluate("document.title").startswith("tokenmill ")
    assert corpus.PWNED not in browser.evaluate("document.title")


def test_every_document_is_text_and_nothing_of_it_runs(browser, clean_runs, tmp_path):
    every = write_report(clean_runs[0], ReportConfig(examples_per_reason=100, kept_examples=100),
                         destination=tmp_path / "every.html")
    opened(browser, every)
    hostile = "img, iframe, object, embed, textarea, a[href^='javascript'], body style, [onerror], [onload], " \
              "[onmouseover]"
    assert browser.evaluate(f"document.querySelectorAll({json.dumps(hostile)}).length") == 0
    shown = browser.evaluate("document.querySelector('main').textContent")
    for doc in corpus.HOSTILE[:5]:
        assert doc["text"][:45] in shown, doc["id"]
    assert corpus.HOSTILE[3]["id"] in shown and corpus.NOT_JSON in shown
    # the report's own script works: every section opens
    browser.evaluate("document.getElementById('expand-all').click()")
    assert browser.evaluate("[...document.querySelectorAll('details')].every(d => d.open)")


def test_the_dom_holds_the_counts_and_the_sampled_ids(browser, clean_runs):
    out = clean_runs[1]
    opened(browser, out / "report.html")
    s = stats(out)
    cells = browser.evaluate("[...document.querySelectorAll('#funnel tbody tr')][0].innerText.split('\\t')")
    assert [c.strip() for c in cells[2:6]] == [f"{s[k]:,}" for k in ("input", "kept", "rejected", "quarantined")]
    reasons = browser.evaluate("""Object.fromEntries([...document.querySelectorAll('details.reason')].map(d =>
        [d.querySelector('.name').textContent, [...d.querySelectorAll('code.doc-id')].map(c => c.textContent)]))""")
    assert reasons == sample_by_reason(out / "rejected", ReportConfig().examples_per_reason)


def test_the_pipeline_report_and_a_comparison_load_clean(browser, pipeline_run, clean_runs, tmp_path):
    opened(browser, pipeline_run / "report.html")
    titles = browser.evaluate("[...document.querySelectorAll('h2')].map(h => h.textContent.split(' ')[0])")
    assert titles[:1] == ["Funnel"] and {"Extract", "Clean", "Dedup", "Decontaminate", "Tokenizer", "Shards",
                                         "Mixture"} <= set(titles)
    assert browser.evaluate("document.querySelectorAll('mark.span').length") >= 5
    opened(browser, write_comparison(clean_runs[0], clean_runs[1], destination=tmp_path / "compare.html"))
    assert browser.evaluate("document.querySelectorAll('.pair').length") > 0
