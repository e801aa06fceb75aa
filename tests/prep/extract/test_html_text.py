"""The main text of a page: its article's paragraphs, in order, and not the menus, sidebars, share
buttons, cookie banners and footers around it."""

from prep.extract.html_text import main_text
from tests.web_fixtures import Site, articles

SITE = Site("docs.example.org", "Debian Notes")


def test_the_article_is_kept_whole_and_in_order_and_the_page_around_it_goes():
    for body in articles(5, size=5):
        text = main_text(SITE.page("About packages", body))
        positions = [text.find(p) for p in body]
        assert -1 not in positions and positions == sorted(positions)
        for line in ["We use cookies", "Share:", "Twitter", "Imprint", "Privacy", *SITE.menu, *SITE.related]:
            assert line not in text, line
        assert text.count("\n\n") >= len(body) - 1  # paragraph breaks kept


def test_chinese_articles_and_lists_and_tables_come_out_as_lines():
    body = articles(1, size=4, names=("debian-handbook.zh",))[0]
    items = ("<ul><li>第一项：安装软件包并检查依赖关系是否满足。</li>"
             "<li>第二项：升级系统中所有已安装的软件包。</li></ul>")
    table = "<table><tr><td>稳定版</td><td>适合服务器使用，经过长期测试。</td></tr></table>"
    page = SITE.page("软件包", body, lang="zh").replace("</article>", items + table + "</article>")
    text = main_text(page)
    assert all(p in text for p in body) and "第一项：安装软件包并检查依赖关系是否满足。" in text.split("\n\n")
    assert "稳定版" in text


def test_a_page_without_text_gives_nothing():
    assert main_text("<html><body><nav><a href=/>Home</a></nav></body></html>") == ""
    assert main_text("") == "" and main_text("not html at all") == "not html at all"
