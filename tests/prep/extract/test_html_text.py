"""The main text of a page: its article's paragraphs, in order, and not the menus, sidebars, share
buttons, cookie banners and footers around it."""

import codecs
import re

import pytest
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from prep.extract.html_text import (
    BOILERPLATE_WORDS,
    CLOCK,
    MARK,
    MAX_DEPTH,
    MAX_TITLE_CHARS,
    _fixed_tags,
    _says_boilerplate,
    article,
    html_article,
    main_text,
)
from tests.web_fixtures import Site, articles, paragraphs

TAG = re.compile(r"<[^>]*>")

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


def _page(inner: str) -> str:
    return f"<!DOCTYPE html><html><head><title>t</title></head><body>{inner}</body></html>"


def test_an_article_inside_a_form_or_an_aside_is_kept_and_a_short_form_goes():
    body = articles(1, size=8)[0]
    assert sum(map(len, body)) > 1000  # an article's worth of text
    article = "".join(f"<p>{p}</p>" for p in body)
    for wrapper in ("form", "aside"):  # ASP.NET pages wrap the whole body in a form; some sites put posts in <aside>
        text = main_text(_page(f'<{wrapper} action="/post">{article}</{wrapper}>'))
        assert all(p in text for p in body), wrapper
    search = '<form action="/search"><p>Search this site for articles and manuals about Debian</p><input></form>'
    text = main_text(_page(search + article))
    assert all(p in text for p in body) and "Search this site" not in text


def test_an_article_that_the_main_content_pass_takes_for_a_sidebar_is_read_from_the_whole_page():
    body = articles(1, size=8)[0]
    # a "sidebar" class on the article's wrapper makes resiliparse's main-content pass drop it whole
    wrapped = '<div class="sidebar">' + "".join(f"<p>{p}</p>" for p in body) + "</div>"
    page = SITE.page("About packages", []).replace("<article>", "<article>" + wrapped)
    text = main_text(page)
    assert all(p in text for p in body)
    for line in ["We use cookies", "Share:", "Twitter", "Imprint", *SITE.menu, *SITE.related]:
        assert line not in text, line


def test_a_page_whose_text_is_only_in_noscript_is_read_from_it():
    body = articles(1, size=2)[0]
    text = main_text(_page('<div id="app"></div><noscript>' + "".join(f"<p>{p}</p>" for p in body) + "</noscript>"))
    assert all(p in text for p in body)


def test_the_heading_of_a_removed_list_and_short_lines_between_removed_blocks_go():
    body = articles(1, size=3)[0]
    article = "".join(f"<p>{p}</p>" for p in body)
    links = "".join(f'<p><a href="/a/{i}">{r}</a></p>' for i, r in enumerate(SITE.related))
    page = _page(f"{article}<h3>Most read this week</h3>{links}<p>Page 2 of 7</p>{links}<p>{body[0][:60]}.</p>")
    text = main_text(page)
    assert all(p in text for p in body)
    assert "Most read this week" not in text and "Page 2 of 7" not in text
    # the same short line between two paragraphs of the article stays
    assert "A short line." in main_text(_page(f"<p>{body[0]}</p><p>A short line.</p><p>{body[1]}</p>"))


def test_text_comes_out_in_nfc_without_zero_width_spaces():
    body = articles(1, size=1)[0][0]
    decomposed = "Cafe\u0301 cre\u0300me bru\u0302le\u0301e, a\u200bword joined"
    text = main_text(_page(f"<p>{body}</p><p>{decomposed} and a sentence that is long enough to be prose.</p>"))
    assert "Café crème brûlée, aword joined" in text and "\u200b" not in text


def test_the_marked_article_body_is_read_alone_with_the_block_before_it_and_the_author_box_after_it_goes():
    lead, *body = articles(1, size=5)[0]
    bio = ("Jane Doe has written about free software for twenty years and maintains several packages in "
           "Debian; she lives in Lyon with two cats and far too many keyboards.")
    page = _page(f'<main><h1>About packages</h1><p class="standfirst">{lead}</p>'
                 '<div class="entry-content">' + "".join(f"<p>{p}</p>" for p in body) + "</div>"
                 f'<div class="about-writer"><h3>About the writer</h3><p>{bio}</p></div></main>')
    text, title = article(page)
    # one block before the body is kept (a headline or a standfirst), and the headline is the title
    assert title == "About packages" and text.startswith(lead) and all(p in text for p in body) and bio not in text
    # without the mark the page is read whole, bio included: the mark is what cut it
    assert bio in main_text(page.replace("entry-content", "column"))


def test_the_marked_body_is_told_apart_in_one_pass_and_read_alone_where_that_pass_drops_it():
    (lead, *body), *more = articles(12, size=6)
    related = [p for other in more for p in other if 150 < len(p) < 500 and p not in body][:2]
    for marks in ("entry-content", "entry-content no-share"):  # "share": the page's main-content pass drops it
        page = _page(f'<main><h1>About packages</h1><p>{lead}</p><div class="{marks}">'
                     + "".join(f"<p>{p}</p>" for p in body) + '</div><div class="related"><h3>More</h3>'
                     + "".join(f"<p>{p}</p>" for p in related) + "</div></main>")
        text = main_text(page)
        assert len(related) == 2 and all(p in text for p in body) and not any(p in text for p in related), marks
        assert MARK not in text and "\ue000" not in text


def test_a_marked_body_holding_little_of_the_prose_is_not_taken_for_the_article():
    body = articles(1, size=4)[0]
    page = _page(f'<article><p>{body[0]}</p></article>' + "".join(f"<p>{p}</p>" for p in body[1:]))
    assert all(p in main_text(page) for p in body)


def test_ruby_readings_go_and_the_words_stay():
    sentence = ("<ruby>子<rt>こ</rt></ruby>どもへの<ruby>虐待<rp>(</rp><rt>ぎゃくたい</rt><rp>)</rp></ruby>"
                "をなくすための法律ができました。")
    for markup in (sentence, sentence.replace("<ruby>", "<RUBY>").replace("<rt>", "<RT>")):  # tags in any case
        text = main_text(_page(f"<p>{markup}</p>"))
        assert "子どもへの虐待をなくすための法律ができました。" in text and "ぎゃくたい" not in text
    # end tags left out, as HTML allows: the reading ends at the next tag, not at a </rt> paragraphs later
    omitted = sentence.replace("</rt>", "").replace("</rp>", "")
    between = "学校では、子どもたちが安心して学べる環境を整えることが大切だと考えられています。"
    text = main_text(_page(f"<p>{omitted}</p><p>{between}</p><p>{sentence}</p>"))
    assert text.count("子どもへの虐待をなくすための法律ができました。") == 2 and between in text, text
    assert "子こ" not in text and "ぎゃくたい" not in text  # the readings go all the same



# NHK's easy news: each word with a dictionary entry a link, each kanji under its reading; a Chinese report's
# place names linked, a particle between them; a Korean syllable in its own element
JAPANESE = ('<p><ruby>子<rt>こ</rt></ruby>どもへの<a href="javascript:void(0)" class="dicWin"><ruby>'
            '<span class="under">虐待</span><rt>ぎゃくたい</rt></ruby></a>をなくすための法律ができて、'
            '<a href="javascript:void(0)" class="dicWin"><ruby><span class="under">親</span><rt>おや</rt></ruby></a>'
            'が<a href="javascript:void(0)" class="dicWin"><ruby><span class="under">蹴</span><rt>け</rt></ruby>'
            '<span class="under">っ</span></a>たりする<a href="#d1">体罰</a>を<a href="#d2">禁止</a>'
            'することになりました。</p>')
JAPANESE_TEXT = "子どもへの虐待をなくすための法律ができて、親が蹴ったりする体罰を禁止することになりました。"
CHINESE = ('<p>今年春运期间，<a href="/bj">北京</a><a href="/he">和</a><a href="/sh">上</a>海之间的高铁'
           '每天加开<b>十</b>对列车，<a href="/bj">京</a>沪线客流同比增长两成。</p>')
CHINESE_TEXT = "今年春运期间，北京和上海之间的高铁每天加开十对列车，京沪线客流同比增长两成。"
KOREAN = "<p>서울시는 올해 <span>봄</span>부터 대중교통 요금을 인상한다고 밝혔습니다.</p>"
KOREAN_TEXT = "서울시는 올해 봄부터 대중교통 요금을 인상한다고 밝혔습니다."


@pytest.mark.parametrize(("markup", "expected", "codecs"), [
    (JAPANESE, JAPANESE_TEXT, ("utf-8", "shift_jis", "euc_jp")),
    (CHINESE, CHINESE_TEXT, ("utf-8", "gb18030", "gbk", "big5")),
    (KOREAN, KOREAN_TEXT, ("utf-8", "euc_kr")),
])
def test_a_character_alone_between_two_tags_is_kept_in_every_codec_of_its_language(markup, expected, codecs):
    # resiliparse's main-content pass drops a text of one character that is three bytes in UTF-8 (an icon's
    # glyph, to it): without the fix "親" and "を" went, and "北京上海之间" lost its "和"
    assert expected not in extract_plain_text(HTMLTree.parse(_page(markup)), main_content=True)
    for codec in codecs:
        source, want = markup, expected
        if codec == "big5":  # in the traditional characters Big5 has
            for simplified, traditional in "运運 间間 铁鐵 开開 对對 车車 沪滬 线線 两兩 长長".split():
                source = source.replace(simplified, traditional)
            want = TAG.sub("", source)
        page = f'<html><head><meta charset="{codec}"><title>t</title></head><body>{source}</body></html>'
        text, title, found = html_article(page.encode(codec))
        assert found.replace("_", "-") in {codec.replace("_", "-"), "cp932", "cp949", "big5hkscs", "gb18030"}
        assert want in text.split("\n\n") and "\ue001" not in text, (codec, text)
    assert "ぎゃくたい" not in main_text(_page(JAPANESE))  # the readings still go


def test_a_glyph_or_a_bullet_alone_stays_dropped_and_punctuation_alone_is_kept_without_its_mark():
    # an icon font's glyph (a private-use character in an <i>) and a bullet between links are not text: they stay
    # out, as the pass means them to; a quote closing after a link, a dash, "。" and a currency sign are text; the
    # mark that keeps them never shows, in the text or in the title
    page = ('<html><head><title>親</title></head><body><p>ニュースを<i class="fa">\uf099</i>'
            '<a href="/share">共有</a><span>•</span>する前に、<a href="#">親</a>子で内容を確かめてください<b>。</b></p>'
            '<p>She called it <a href="/q">“the best tool</a>” for the job, from U+0000<span>–</span>U+007F '
            'at <span>€</span><span>20</span> a month; pipenv, or poetry<span>—</span>pip-tools is another.</p>'
            '</body></html>')
    text, title, _ = html_article(page.encode("utf-8"))
    assert text.split("\n\n") == ["ニュースを共有する前に、親子で内容を確かめてください。",
                                   "She called it “the best tool” for the job, from U+0000–U+007F at €20 a month; "
                                   "pipenv, or poetry—pip-tools is another."] and title == "親"
    assert main_text(f"<p>\ue001{JAPANESE}</p>").count("\ue001") == 0  # the page's own such character goes too


# what the pass drops besides a lone character of three UTF-8 bytes: any text of three bytes whose last is not
# ASCII, white space around it stripped first, entities read first; in each, the pass ran the words around it
# together ("ParisLondon") or lost its own; and a character of three UTF-8 bytes that the page's own codec
# writes in one byte, or in three or four
ALONE = [
    ('<a href="/p">Paris</a> — <a href="/l">London</a>', "Paris — London", "utf-8"),
    ('<a href="/p">Paris</a>&mdash;<a href="/l">London</a>', "Paris—London", "utf-8"),
    ('<a href="/p">Paris</a>  &#8211;  <a href="/l">London</a>', "Paris – London", "utf-8"),
    ('see <a href="/n">the notes</a>.&nbsp;<b>Then</b>', "see the notes.\xa0Then", "utf-8"),
    ("it was <span>5°</span> at noon, <span>né</span> in Lyon", "it was 5° at noon, né in Lyon", "utf-8"),
    ('<a href="/p">Paris</a><span>–</span><a href="/l">London</a>, <span>€</span>20', "Paris–London, €20",
     "windows-1252"),
    ('<a href="/p">Москва</a><span>—</span><a href="/l">Петербург</a>', "Москва—Петербург", "windows-1251"),
    ("今日は<b>ｱ</b>イスを食べました", "今日はｱイスを食べました", "shift_jis"),
    ("古い字の<b>丂</b>を見た", "古い字の丂を見た", "euc_jp"),
    ("这是<b>㐀</b>字的例子", "这是㐀字的例子", "gb18030"),
]


@pytest.mark.parametrize(("markup", "expected", "codec"), ALONE)
def test_a_text_the_pass_drops_is_kept_with_white_space_around_it_as_an_entity_and_in_any_codec(markup, expected,
                                                                                                 codec):
    sentence = f"<p>She told us on the phone that {markup} and that the rest of the day went as planned.</p>"
    assert expected not in extract_plain_text(HTMLTree.parse(_page(sentence)), main_content=True)
    page = f'<html><head><meta charset="{codec}"><title>t</title></head><body>{sentence}</body></html>'
    text, _, found = html_article(page.encode(codec), codec)
    assert codecs.lookup(found).name in (codecs.lookup(codec).name, "cp932"), found
    assert expected in text and "\ue001" not in text, text
    assert expected in main_text(page)  # the same where the page comes decoded


def test_a_custom_element_whose_name_starts_as_a_list_tag_s_is_not_renamed():
    # Distill's footnotes and citations (<dt-fn>, <dt-cite>), a web component's <li-item> and <figure-card>: a
    # list tag's name ends at white space, "/" or ">", not at any byte that cannot go on a word
    page = _page("<p>Early layers detect edges<dt-fn>Olah et al., 2017</dt-fn> and later layers detect objects, as "
                 "the figures show <figure-card>over</figure-card> many training runs of the network.</p>")
    assert main_text(page) == ("Early layers detect edgesOlah et al., 2017 and later layers detect objects, as the "
                               "figures show over many training runs of the network.")


def test_a_tag_named_in_a_title_is_the_title_s_text_and_the_page_s_lists_are_still_read():
    # a <title> holds text, not markup: a page about HTML titled with the tags it is about kept them as
    # "The <p > element" and "Why <div   > beats <div>" where the list and figure tags were renamed; an SVG
    # drawing's <title/> after it closes itself (taken for a title, the page's lists were no longer read)
    for title in ("The <li> element | MDN", "Why <figure> beats <div>", "<DL>, <dt> and <dd>"):
        page = (f"<html><head><title>{title}</title></head><body><p>A list of the things a page like this one holds, "
                "in the order it shows them to its readers:</p><svg><title/><path d=\"M0,0\"/></svg>"
                "<ul><li>the element's name and what it is for, in a "
                "sentence or two;</li><li>its attributes, each with an example of its use.</li></ul></body></html>")
        text, found, _ = html_article(page.encode())
        assert found == title and article(page)[1] == title
        assert text.split("\n\n")[1:] == ["the element's name and what it is for, in a sentence or two;",
                                           "its attributes, each with an example of its use."]


def test_broken_bytes_alone_between_two_tags_are_read_past():
    # two bytes that are no character in the page's codec decode to two replacement characters, not one (found
    # by the fuzz test: the check of one character raised on them); a lone lead byte before "<" the same
    for page, codec in ((b"</div>\xc2\x80<div></div>", "shift_jis"), (b"<p>a</p><b>\x81\x30</b><p>b</p>", "gbk"),
                        (b"<p>x</p><b>\xe4\xb8</b><i>\xe4</i>", "utf-8"), (b">\xe4\xb8\x80<", "utf-8")):
        text, _, found = html_article(page, codec)
        assert "\ue001" not in text and found in (codec, "cp932", "gb18030")


def test_twenty_thousand_characters_alone_are_all_kept():
    # a page of 20,000 kanji each in its own element, as a dictionary marks its words: every one kept, in order
    kanji = [chr(0x4E00 + i) for i in range(20000)]
    body = "".join(f"<p>第{i}項：" + "".join(f'<span class="under">{k}</span>から' for k in kanji[i * 50:(i + 1) * 50])
                   + "。</p>" for i in range(400))
    text = main_text(_page(body))
    assert re.findall("[\u4e00-\u9fff]", re.sub(r"第\d+項", "", text)) == kanji


def test_the_most_specific_mark_is_the_article_and_the_teasers_around_it_go():
    body, *more = articles(12, size=4)
    others = [p for other in more for p in other if 150 < len(p) < 500][:3]
    teasers = "".join(f'<div class="teaser"><h3>Story {i}</h3><p>{p}</p></div>' for i, p in enumerate(others))
    # the page's <article> holds the marked body and, after it, a paragraph of each of three other stories: about
    # as much prose as the body itself
    page = _page('<article class="page"><h1>About packages</h1><div itemprop="articleBody">'
                 + "".join(f"<p>{p}</p>" for p in body) + f"</div>{teasers}</article>")
    text = main_text(page)
    assert len(others) == 3 and all(p in text for p in body) and not any(p in text for p in others)


def test_captions_and_comment_sections_go():
    body, caption, comment = articles(3, size=4)
    page = _page("<main><h1>About packages</h1>" + "".join(f"<p>{p}</p>" for p in body[:2])
                 + f'<div class="image-caption">{caption[0]} (Photo: Jane Doe)</div>'
                 + f'<figure><img src="a.png"><figcaption>{caption[1]}</figcaption></figure>'
                 + "".join(f"<p>{p}</p>" for p in body[2:])
                 + f'<div id="comments"><h3>3 responses</h3><p>{comment[0]}</p><p>{comment[1]}</p></div></main>')
    text = main_text(page)
    assert all(p in text for p in body)
    assert caption[0] not in text and caption[1] not in text and comment[0] not in text and comment[1] not in text


def test_what_boilerplate_says_in_german_french_and_spanish_goes():
    body = articles(1, size=4)[0]
    for heading in ("Ähnliche Beiträge", "Das könnte Dich auch interessieren", "Vous aimerez aussi", "Mirá también",
                    "Über den Autor", "Stand: 05. Februar 2020", "Bild: AFP/SID/Pascal Guyot", "Sharing is caring!",
                    "This post may contain affiliate and/or referral links. Please see my disclosure page."):
        page = _page("<main>" + "".join(f"<p>{p}</p>" for p in body[:2]) + f"<p>{heading}</p>"
                     + "".join(f"<p>{p}</p>" for p in body[2:]) + "</main>")
        text = main_text(page)
        assert all(p in text for p in body) and heading not in text, heading


def test_a_lone_dateline_goes_and_a_schedule_of_dated_items_after_the_last_paragraph_stays():
    body = articles(1, size=4)[0]
    tour = [f"{day} – {city} @ {venue}" for day, city, venue in (
        ("June 9", "West Palm Beach, FL", "Coral Sky Amphitheatre"),
        ("June 10", "Tampa, FL", "Credit Union Amphitheatre"),
        ("Aug. 2", "Clarkston, MI", "DTE Energy Music Theatre"),
        ("Sept. 5", "Seattle, WA", "White River Amphitheatre"))]
    for dateline in ("June 9, 2019", "Aug. 5, 2019 | 4:10pm", "2019-06-09"):
        page = _page(f"<main><p>{dateline}</p>" + "".join(f"<p>{p}</p>" for p in body)
                     + "<ul>" + "".join(f"<li>{item}</li>" for item in tour) + "</ul></main>")
        text = main_text(page)
        assert dateline not in text and all(p in text for p in body), dateline
        assert text.endswith("\n\n".join(tour)), dateline  # after the last paragraph, whole and in order
    two = _page("<main>" + "".join(f"<p>{p}</p>" for p in body) + "".join(f"<p>{item}</p>" for item in tour[:2])
                + "</main>")
    assert tour[0] not in main_text(two)  # two dated lines are datelines, not a schedule


def test_a_list_of_items_alike_after_the_last_paragraph_stays_and_a_trailing_line_goes():
    body = articles(1, size=4)[0]
    teams = [f"{team} (Group {group}): {count} appearance" for team, group, count in (
        ("England", "A", "10th"), ("Czech Republic", "A", "Seventh"), ("Ukraine", "B", "Third"),
        ("Spain", "F", "11th"))]
    page = _page("<main>" + "".join(f"<p>{p}</p>" for p in body) + "<h3>Qualified teams</h3><ul>"
                 + "".join(f"<li>{team}</li>" for team in teams) + "</ul><p>Jane Doe</p></main>")
    text = main_text(page)
    assert all(p in text for p in body) and text.endswith("\n\n".join(teams))  # the author's name goes


def test_a_quoted_tweet_is_part_of_the_article():
    body = articles(1, size=4)[0]
    tweet = ("The highest-graded player on defense was Joe Schobert, with two interceptions and a pass broken up "
             "in coverage")
    page = _page("<main>" + "".join(f"<p>{p}</p>" for p in body[:2])
                 + f'<div><blockquote class="twitter-tweet"><p lang="en">{tweet}</p>— PFF (@PFF) '
                   '<a href="https://twitter.com/PFF/status/1">November 15, 2019</a></blockquote>'
                   '<script async src="https://platform.twitter.com/widgets.js"></script></div>'
                 + "".join(f"<p>{p}</p>" for p in body[2:]) + "</main>")
    text = main_text(page)
    assert tweet in text and all(p in text for p in body)


def test_a_sentence_that_links_its_source_stays_and_a_line_of_links_goes():
    body = articles(1, size=4)[0]
    sourced = ('The new patient hunted and ate a wild rabbit on Nov. 5, according to <a href="/x">the state-run '
               'Xinhua News Agency</a>.')  # a third of it in the link
    page = _page("<main>" + "".join(f"<p>{p}</p>" for p in body[:2]) + f"<p>{sourced}</p>"
                 + "".join(f"<p>{p}</p>" for p in body[2:])
                 + '<p><a href="/a">Origin of the plague traced to Russia</a> and <a href="/b">more</a></p></main>')
    text = main_text(page)
    assert 0.3 < len("the state-run Xinhua News Agency") / len(TAG.sub("", sourced)) < 0.5
    assert "according to the state-run Xinhua News Agency." in text and all(p in text for p in body)
    assert "Origin of the plague" not in text


def test_a_consent_notice_goes_whatever_its_length_and_an_article_about_cookies_stays():
    body = articles(1, size=4)[0]
    notice = ("This website uses cookies. By continuing to use our website without changing the settings, you are "
              "agreeing to our use of cookies. Click here for more information.")
    baking = ("Authorities say that the cases appear to be unrelated, and the cookies baked for the fair used "
              "butter from the same farm as the year before.")
    page = _page(f"<p>{notice}</p><main>" + "".join(f"<p>{p}</p>" for p in body) + f"<p>{baking}</p></main>")
    text = main_text(page)
    assert len(notice) > 120 and notice not in text  # longer than the short blocks boilerplate words are sought in
    assert baking in text and all(p in text for p in body)  # "unrelated" is not "related"


CONSENT_TEXT = (
    "We and our 977 partners store and access personal data, like browsing data or unique identifiers, on your "
    "device. Selecting Allow all enables tracking technologies to support the purposes shown under we and our "
    "partners process data to provide. Selecting Reject all or withdrawing your consent will disable them. If "
    "trackers are disabled, some content and ads you see may not be as relevant to you. You can resurface this menu "
    "to change your choices or withdraw consent at any time by clicking the Manage preferences link on the bottom "
    "of the webpage. Your choices will have effect within our Website.")


@pytest.mark.parametrize("dialog", [  # the platforms' containers by their ids and classes alone (no role)
    '<div id="onetrust-consent-sdk" data-nosnippet="true"><div id="onetrust-banner-sdk" class="otFlat">'
    '<div id="onetrust-policy"><h2 id="onetrust-policy-title">You rely on us for truth and transparency</h2>'
    '<div id="onetrust-policy-text">{}</div></div></div></div>',  # a news site's (OneTrust)
    '<div id="sp_message_container_1355822" style="display: block;"><p>{}</p></div>',  # Sourcepoint
    '<div class="cmplz-cookiebanner cmplz-hidden banner-1 optin"><p>{}</p></div>',  # Complianz
    '<div id="CybotCookiebotDialog"><p>{}</p></div>',  # Cookiebot
    # a shop's own platform: any dialog that asks for consent
    '<div id="ensNotifyBanner" role="dialog" aria-label="Consent Banner"><div id="ensDescription">{}</div></div>'],
    ids=["onetrust", "sourcepoint", "complianz", "cookiebot", "a dialog asking consent"])
def test_a_consent_platforms_dialog_goes_where_it_is_the_longest_prose_on_a_page_of_teasers(dialog):
    """A section front's teasers are short linked headlines; the consent dialog of its platform was the longest
    prose on the page, and came out as its text (found on a news site's front of 2025's benchmark set)."""
    teasers = "".join(  # a linked headline, a line of excerpt
        f'<li><article class="card"><a href="/news/{k}"><h2>{p[:70]}</h2></a><p>{p[:60]}</p></article></li>'
        for k, p in enumerate(articles(1, size=6)[0]))
    for_dialog = _page(f"<main><ul>{teasers}</ul></main>" + dialog.format(CONSENT_TEXT))
    assert "cookie" not in CONSENT_TEXT.lower() and len(CONSENT_TEXT) > 400  # the consent rule's words and length
    text = main_text(for_dialog)
    assert "personal data" not in text and "977 partners" not in text
    assert main_text(_page(f"<main><ul>{teasers}</ul></main>")) == text


def test_a_dialog_that_does_not_ask_for_consent_stays():
    """Some sites show their text in a modal dialog (a product's details, a quick view): it is content."""
    body = articles(1, size=4)[0]
    modal = '<div class="modal" role="dialog" aria-modal="true">' + "".join(f"<p>{p}</p>" for p in body) + "</div>"
    text = main_text(_page(f"<main><p>{body[0][:40]}</p></main>{modal}"))
    assert all(p in text for p in body)


def test_a_short_paragraph_saying_a_boilerplate_word_stays_where_the_article_is_about_it():
    """A short paragraph that says "download" (or "newsletter", "subscribers") is boilerplate on most pages, and the
    subject on a page whose long paragraphs say it too (a Substack post about its own newsletter lost every
    short paragraph naming it)."""
    found = paragraphs()
    about = [p for p in found if len(p) >= 120 and "download" in p.lower()][1:4]
    short = "Install required packages for the compilation and download the source package as the following."
    assert short in found and len(short) < 120  # a paragraph of the sample, shorter than a short block
    text = main_text(SITE.page("Installing", [about[0], short, *about[1:]]))
    assert short in text and all(p in text for p in about)
    assert SITE.template_lines()[0] not in text  # the newsletter's promotion still goes: no long block says it
    other = [p for p in found if len(p) >= 120 and "download" not in p.lower()][:3]
    assert short not in main_text(SITE.page("Installing", [other[0], short, *other[1:]]))


# a shop's consent dialog, its sentences long ones (bhphotovideo.com, 2025)
COOKIE_POLICY = [
    "Cookies help us to provide important features and functionality on our websites and mobile apps. We use them "
    "to improve your customer experience.",
    "Cookies collect information about how you use a website, like which pages you visited and which links you "
    "clicked on. Their sole purpose is to improve website functions.",
    "These cookies allow a website to remember choices you have made in the past, like what language you prefer, "
    "what region you are in, or what your user name and password are so you can automatically log in."]


def test_the_words_of_legal_notices_stay_boilerplate_where_the_page_says_them_at_length():
    """A page's own cookie policy says "cookies" in long sentences: the short cookie line stays boilerplate."""
    body = articles(1, size=3)[0]
    line = "Strictly Necessary Cookies"  # a consent platform's heading
    text = main_text(_page("<main>" + "".join(f"<p>{p}</p>" for p in [body[0], line, *body[1:], *COOKIE_POLICY])
                           + "</main>"))
    assert all(p in text for p in body) and line not in text


# MDN's reference of the WebSocket interface (developer.mozilla.org, 2025): each property's name links to its
# own page, and its description follows without links
PROPERTIES = [("WebSocket.bufferedAmount", "The number of bytes of queued data."),
              ("WebSocket.extensions", "The extensions selected by the server."),
              ("WebSocket.protocol", "The sub-protocol selected by the server."),
              ("WebSocket.readyState", "The current state of the connection."),
              ("WebSocket.url", "The absolute URL of the WebSocket.")]
# a news site's related articles (tdg.ch, 2019): each headline links to its article, and its excerpt follows
RELATED = [("Le canton de Berne veut interdire le chlorothalonil",
            "L'interdiction immédiate du pesticide est demandée par le gouvernement bernois."),
           ("Chlorothalonil: le Conseil fédéral prend son temps",
            "Dans l'UE, la substance active est considérée depuis longtemps comme probablement cancérigène."),
           ("Le géant agricole Fenaco bannit le chlorothalonil en Suisse",
            "Le fongicide controversé ne sera plus distribué par la coopérative."),
           ("Les distributeurs d'eau veulent interdire un pesticide",
            "Les teneurs dépassent dans de nombreux captages les valeurs maximales.")]


def _reference_list(pairs: list[tuple[str, str]]) -> str:
    return "<dl>" + "".join(f'<dt><a href="/{name}"><code>{name}</code></a></dt><dd>{description}</dd>'
                            for name, description in pairs) + "</dl>"


# a reference of 3,000 names, each once (an API's index page), as well as the page's five and the shortest run
LONG_REFERENCE = [(f"{name}{k}", description) for k in range(600) for name, description in PROPERTIES]


@pytest.mark.parametrize("pairs", [PROPERTIES, PROPERTIES[:3], LONG_REFERENCE], ids=["five", "three", "3000"])
def test_a_reference_lists_linked_names_and_their_descriptions_stay(pairs):
    """A name that links to its own page is not navigation where a sentence describing it follows, name after
    name: without that, MDN's pages lost every property and the descriptions shorter than a sentence of prose."""
    body = articles(1, size=4)[0]
    text = main_text(_page("<main>" + "".join(f"<p>{p}</p>" for p in body[:2]) + "<h2>Instance properties</h2>"
                           + _reference_list(pairs) + "".join(f"<p>{p}</p>" for p in body[2:]) + "</main>"))
    assert all(p in text for p in body)
    assert all(f"{name}\n\n{description}" in text for name, description in pairs)


def test_two_linked_names_with_descriptions_and_a_related_articles_list_are_not_a_reference_list():
    """Fewer than TERM_RUN names, or headlines of more than TERM_WORDS words (teasers of other articles), stay
    links: they go."""
    body = articles(1, size=4)[0]
    for pairs in (PROPERTIES[:2], RELATED):
        text = main_text(_page("<main>" + "".join(f"<p>{p}</p>" for p in body) + "<h2>Articles en relation</h2>"
                               + _reference_list(pairs) + "</main>"))
        assert all(p in text for p in body) and not any(name in text for name, _ in pairs)


# an interview's short lines that say "share" and "apps" (Zyte's evaluation pages, 2019), and the buttons and the
# install prompt a page puts between its paragraphs (2025's pages: Invision forums, blogs)
SAYS_SHARE_AND_APPS = ["We've asked him to share some insights into the business and what's next for the company.",
                       "Q: Favorite apps?", "A: The ones that let me share photos with my family."]
SHARE_BUTTONS = ["Share this article", "Share", "Share on other sites", "Share via", "Get the Hindustan Times app!",
                 "To install this app on iOS and iPadOS", "Tap Add to Home screen or Install app."]



# short lines of German and French pages (trafilatura's evaluation pages) whose words hold a boilerplate word's
# letters ("teilen" in "verteilen", "login" in "Diplombiologin", "werbung" in "Bewerbung", "mehr zu" in "sich
# mehr zu bewegen"), and those pages' labels and buttons that say the word itself
SAYS_THE_LETTERS = ["Den Schmand mit dem abgekühlten Pudding verrühren. Die Mandarinen darauf verteilen.",
                    "Alle Tipps zur Naturbeobachtung stammen von K. Schmiing (Diplombiologin).",
                    "Nach der Bewerbungsphase informieren wir Sie, ob Sie als Tester ausgewählt wurden.",
                    "Katzen werden dadurch animiert, sich mehr zu bewegen, was sich positiv auswirkt.",
                    "Il y a plus d'un an que la commune attend une réponse du canton."]
SAYS_THE_WORD = ["Möchten Sie den Artikel teilen?", "Anzeige", "Mehr zum Thema", "Login", "Werbung",
                 "Il n'y a plus d'articles dans votre panier."]


@pytest.mark.parametrize("stays, goes", [(SAYS_SHARE_AND_APPS, SHARE_BUTTONS), (SAYS_THE_LETTERS, SAYS_THE_WORD)],
                         ids=["share-and-apps", "a-words-letters"])
def test_short_lines_that_say_a_boilerplate_word_otherwise_stay_and_its_buttons_and_labels_go(stays, goes):
    body = articles(1, size=4)[0]
    lines = [body[0], *stays, body[1], *goes, *body[2:]]
    text = main_text(_page("<main>" + "".join(f"<p>{line}</p>" for line in lines) + "</main>"))
    assert all(p in text for p in body) and all(line in text for line in stays)
    assert not [line for line in goes if line in text.split("\n\n")]


# an insurer's questions and answers (progressive.com, 2025): each answer a panel that its question's button
# opens (aria-controls), hidden (aria-hidden) until then but the first
FAQ = [("How does pet insurance work?", "Pet insurance is an insurance policy that can reimburse you for a portion of "
        "your pet's eligible vet bills."),
       ("Can I use my own vet?", "Unlike with health insurance for humans, there are no networks or copays for pet "
        "insurance. As long as your vet is a licensed veterinarian in the U.S., you can file claims for your "
        "eligible vet costs."),
       ("When can I file a claim?", "You can file a pet insurance claim once the waiting period for the applicable "
        "coverage is over, if there is one.")]


def _accordion(items: list[tuple[str, str]], collapsed: str) -> str:
    return '<ul class="accordion-container">' + "".join(
        f'<li><h3><button type="button" aria-controls="inner-{k}" aria-expanded="{str(k == 0).lower()}">'
        f'<span>{question}</span></button></h3><div role="region" id="inner-{k}"{collapsed if k else ""}>'
        f'<p>{answer}</p></div></li>' for k, (question, answer) in enumerate(items)) + "</ul>"


# how a collapsed panel is hidden: aria-hidden (progressive.com), or an inline style (energysage.com's guide, 2025:
# each step's text under a link with role=button that names it)
COLLAPSED = {"aria-hidden": ' aria-hidden="true"', "display-none": ' style="display:none;"',
             "display-none-spaced": ' class="panel" style="padding: 0; DISPLAY: none"'}


@pytest.mark.parametrize("collapsed", list(COLLAPSED))
@pytest.mark.parametrize("items", [FAQ, FAQ * 300], ids=["three", "900"])
def test_an_accordions_collapsed_answers_are_text_and_other_hidden_elements_are_not(items, collapsed):
    body = articles(1, size=4)[0]
    clone = "A carousel's copy of its first slide, hidden from screen readers and shown by no button at all."
    menu = "A menu for small screens, hidden by its style until a script shows it, and named by no control."
    text = main_text(_page("<main>" + "".join(f"<p>{p}</p>" for p in body) + "<h2>Common questions</h2>"
                           + _accordion(items, COLLAPSED[collapsed])
                           + f'<div aria-hidden="true" id="slide-copy"><p>{clone}</p></div>'
                           + f'<div style="display: none" id="small-menu"><p>{menu}</p></div>' + "</main>"))
    assert all(p in text for p in body) and all(answer in text for _, answer in FAQ)
    assert text.count(FAQ[1][1]) == len(items) // len(FAQ) and clone not in text and menu not in text


def test_the_panels_of_several_accordions_that_give_them_the_same_ids_are_all_shown():
    """An installation guide (energysage.com, 2025) has an accordion in each section, each naming its panels
    "undefined_0_content", "undefined_1_content", ...: every panel of that id is shown, not the first alone."""
    body = articles(1, size=4)[0]
    steps = [answer for _, answer in FAQ]
    accordion = "".join(f'<a role="button" aria-controls="undefined_{k}_content">Step {k + 1}</a>'
                        f'<div id="undefined_{k}_content" style="display:none;"><p>{step}</p></div>'
                        for k, step in enumerate(steps))
    sections = 50
    text = main_text(_page("<main>" + "".join(f"<h2>Week {week}</h2><p>{body[week % len(body)]}</p>{accordion}"
                                              for week in range(sections)) + "</main>"))
    assert all(text.count(step) == sections for step in steps)


# a charity's tax help (uwkc.org, 2025): its questions and answers in a column whose layout class is "collapsed",
# which resiliparse's main-content pass takes for hidden; and an accordion's "expandable" sections
@pytest.mark.parametrize("classes", ["flex_container is-style-column collapsed", "faq expandable", "is-collapsed"])
@pytest.mark.parametrize("copies", [1, 200])
def test_what_a_class_says_can_be_opened_is_text_and_what_it_says_is_hidden_is_not(classes, copies):
    body = articles(1, size=4)[0]
    menu = "A menu for small screens that only a script shows, with a class that says it is hidden."
    sections = "".join(f'<div class="{classes}"><div class="accordion"><h3>{question}</h3><div><p>{answer}</p>'
                       f'</div></div></div>' for question, answer in FAQ * copies)
    text = main_text(_page("<main>" + "".join(f"<p>{p}</p>" for p in body) + "<h2>Common questions</h2>" + sections
                           + f'<div class="menu hidden"><p>{menu}</p></div></main>'))
    assert all(p in text for p in body) and all(text.count(answer) == copies for _, answer in FAQ)
    assert menu not in text


# a news site quoting posts (nj.com, 2019: each tweet a <blockquote class="twitter-tweet"> in a "social-media-embed"),
# a CRM's customers' follow-ups, a newsletter's post: classes that resiliparse's pass reads as share and follow
# buttons
QUOTED = ["Yes this is real and yes the state spent nearly half a million dollars on the campaign, said a reader.",
          "The whole point of this ad campaign is to raise awareness, and so far it seems to be working, said another."]
MISREAD_AS_BUTTONS = {
    "embedded-tweets": lambda quote: f'<div class="social-media-embed"><blockquote class="twitter-tweet"><p>{quote}'
                                     f'</p>&mdash; A Reader (@reader) November 18, 2019</blockquote></div>',
    "follow-ups": lambda quote: f'<div class="follow-up__item"><p class="follow-up__text">{quote}</p></div>',
    "a-newsletters-post": lambda quote: f'<div class="body markup newsletter-post"><p>{quote}</p></div>'}


@pytest.mark.parametrize("copies", [1, 300])
@pytest.mark.parametrize("kind", list(MISREAD_AS_BUTTONS))
def test_quoted_posts_and_follow_ups_are_text_and_share_buttons_are_not(kind, copies):
    """An article of `copies` times four paragraphs, two posts after the first two of each four."""
    body = articles(1, size=4)[0]
    buttons = '<div class="share-buttons"><a href="/s?fb">Facebook</a> <a href="/s?tw">Twitter</a></div>'
    four = ("".join(f"<p>{p}</p>" for p in body[:2]) + "".join(MISREAD_AS_BUTTONS[kind](quote) for quote in QUOTED)
            + "".join(f"<p>{p}</p>" for p in body[2:]))
    text = main_text(_page('<article class="article h-entry"><div class="article__story"><div class="entry-content">'
                           + buttons + four * copies + "</div></div></article>"))
    assert all(text.count(p) == copies for p in body) and all(text.count(quote) == copies for quote in QUOTED)
    assert "Facebook" not in text


@pytest.mark.parametrize("line", ["8 min read", "Reading Time: 11 minutes", "· 12 minute read", "Lesezeit: 4 Minuten"])
def test_a_reading_time_goes(line):
    """Blogs and news sites of every platform put the minutes it takes to read the article beside its title."""
    body = articles(1, size=4)[0]
    text = main_text(SITE.page("About packages", [body[0], line, *body[1:]]))
    assert all(p in text for p in body) and line not in text


def test_a_class_that_styles_captions_is_not_a_caption():
    """Tailwind's arbitrary variants style an article's figures from its wrapper (`[&_figcaption]:mt-xs`) and
    `caption-bottom` places a table's caption: found on a blog, the whole article went as a caption."""
    body, caption = articles(2, size=4)
    wrapper = "break-words [&_p]:text-black60 [&_figcaption]:mt-xxs lg:[&_figcaption]:mt-xs"
    page = _page(f'<main><article class="{wrapper}">' + "".join(f"<p>{p}</p>" for p in body[:2])
                 + f'<figure><img src="a.png"><div class="wp-caption-text">{caption[0]}</div></figure>'
                 + f'<table class="caption-bottom"><tr><td>{body[2]}</td></tr></table>'
                 + "".join(f"<p>{p}</p>" for p in body[3:]) + "</article></main>")
    text = main_text(page)
    assert all(p in text for p in body) and caption[0] not in text


def test_a_forums_thread_is_kept_where_the_page_has_no_article_above_its_comments():
    """Forum software puts a topic's posts in a comment section (`<div id="comments">`, each post an
    <article>): with it gone the page kept its app banner. Under an article, comments still go."""
    *posts, body = articles(4, size=3)
    thread = "".join(f'<article class="ipsEntry"><p class="author">member{i}</p>'
                     + "".join(f"<p>{p}</p>" for p in post) + "</article>" for i, post in enumerate(posts))
    forum = _page("<main><h1>If the forum comes to an end soon</h1><p>Tap Add to Home Screen.</p>"
                  f'<div id="comments"><form>{thread}</form></div></main>')
    text = main_text(forum)
    assert all(p in text for post in posts for p in post)
    long_thread = _page("<main><h1>A long topic</h1><p>Tap Add to Home Screen.</p>"
                        f'<div id="comments"><form>{thread * 400}</form></div></main>')
    assert len(long_thread) > 1_000_000 and main_text(long_thread).count(posts[2][1]) == 400
    blog = _page("<main><h1>About packages</h1>" + "".join(f"<p>{p}</p>" for p in body)
                 + f'<div id="comments">{thread}</div></main>')
    text = main_text(blog)
    assert all(p in text for p in body) and not any(p in text for post in posts for p in post)


def test_a_caption_is_found_by_its_class_in_any_case():
    body, caption = articles(2, size=4)
    page = _page("<main>" + "".join(f"<p>{p}</p>" for p in body[:2])
                 + f'<div class="InlineImage-imageEmbedCaption">{caption[0]}</div>'
                 + "".join(f"<p>{p}</p>" for p in body[2:]) + "</main>")
    text = main_text(page)
    assert all(p in text for p in body) and caption[0] not in text


def test_the_boilerplate_words_grouped_by_first_character_match_where_the_plain_alternation_does():
    plain = re.compile("|".join(BOILERPLATE_WORDS))
    texts = [f"{before}{word}{after}" for word in ("share", "share this", "get the news app", "comments", "dpa", "afp",
                                                   "(c)", "e-mail", "emails", "weitere themen", "mira também",
                                                   "support our", "©")
             for before in ("", "a ", "x") for after in ("", " now", "s", "-", ":")]
    texts += ["shared notes", "whatsapp", "happy", "dpa-news", "12:30 uhr", "um 9:05 uhr", "9:5 uhr", "uhrzeit",
              "favorite apps?", "get the app"]
    found = [text for text in texts if _says_boilerplate(text)]
    assert found == [text for text in texts if plain.search(text) or CLOCK.search(text)]
    assert "shared notes" not in found and "whatsapp" not in found and "a share now" not in found
    assert {"share", "a share:", "a share this now", "get the news app", "get the app"} <= set(found)
    assert "favorite apps?" not in found  # an app is said in articles as often as in chrome: "get the app" is chrome
    assert "12:30 uhr" in found and "uhrzeit" not in found


def test_list_tags_become_paragraph_tags_in_any_case_and_nothing_else_does():
    page = b'<link rel=x><ul class="a"><LI>one</li><li/>two<Dt>t</DT><dd>d</dd></ul><old>o</old><ol2><lid> a < li <d'
    assert _fixed_tags(page)[0] == (b'<link rel=x><p  class="a"><p >one</p ><p />two<p >t</p ><p >d</p ></p >'
                                          b'<old>o</old><ol2><lid> a < li <d')
    assert _fixed_tags(b"")[0] == b"" and _fixed_tags(b"<li")[0] == b"<li"  # too short to hold a tag


def test_a_byte_order_mark_before_the_page_is_not_text():
    sentence = "The committee met on Tuesday and agreed to publish its report before the end of the month."
    page = f"\ufeff<!doctype html><html><head><title>Town news</title></head><body><p>{sentence}</p></body></html>"
    assert main_text(page) == sentence


def test_a_page_nested_deeper_than_the_main_content_pass_can_afford_is_read_by_the_whole_page_pass(monkeypatch):
    # resiliparse's main-content pass costs the square of the depth: 20,000 unclosed <div> took it 5.7 s, and a
    # hostile page of 10 MB can nest a hundred times deeper
    import prep.extract.html_text as html_text

    passes = []

    def recorded(tree, **options):
        passes.append(options["main_content"])
        return extract_plain_text(tree, **options)

    measured = []
    measure = html_text._text_outside_links
    monkeypatch.setattr(html_text, "extract_plain_text", recorded)
    monkeypatch.setattr(html_text, "_text_outside_links", lambda node: measured.append(node) or measure(node))
    body = articles(1, size=3)[0]
    article = "".join(f"<p>{p}</p>" for p in body)
    for depth, shallow in ((100, True), (MAX_DEPTH + 1, False)):
        for tag in ("div", "aside"):  # the text of each of nested <aside> costs the square of the depth too
            passes.clear()
            measured.clear()
            text = main_text(_page(f"<{tag}>" * depth + article + f"</{tag}>" * depth))
            assert set(passes) == {shallow} and (len(measured) == depth if tag == "aside" and shallow else not measured)
            assert text == ("" if tag == "aside" and shallow else "\n\n".join(body)), (depth, tag)


def test_the_headline_comes_out_as_the_title_and_the_text_starts_with_the_article():
    body = articles(1, size=4)[0]
    paragraphs = "".join(f"<p>{p}</p>" for p in body)
    headline = "Debian packages explained for new users"
    for head, marked in [(f"<title>{headline} | Debian Notes</title>", f"<h1>{headline}</h1>"),  # within a title
                         (f'<meta property="og:title" content="{headline}">', f"<h2>{headline}</h2>"),
                         ("<title>Debian Notes</title>", f"<h1>{headline}</h1>")]:  # an <h1> is a title too
        page = f"<html><head>{head}</head><body><main>{marked}{paragraphs}</main></body></html>"
        text, title = article(page)
        assert title == headline and text.startswith(body[0]) and headline not in text, (head, text[:80])
        assert html_article(page.encode("utf-16-le"), "utf-16le") == (text, title, "utf-16-le")


def test_a_heading_the_page_does_not_name_its_title_stays_in_the_text_and_the_title_is_the_pages():
    body = articles(1, size=4)[0]
    kicker = "A short history of the package manager"
    page = (f"<html><head><title>Debian Notes: packages</title></head><body><main><h2>{kicker}</h2>"
            + "".join(f"<p>{p}</p>" for p in body) + "</main></body></html>")
    text, title = article(page)
    assert text.startswith(kicker) and title == "Debian Notes: packages"
    # "Debian" alone within the title is too short to be its headline; a page without any title has ""
    assert article(page.replace(kicker, "Debian"))[0].startswith("Debian\n\n")
    assert article(page.replace("<title>Debian Notes: packages</title>", ""))[1] == ""


def test_a_headline_that_is_the_whole_text_stays_text():
    sentence = "Packages are installed with apt, which resolves their dependencies for you."
    text, title = article(f"<html><head><title>{sentence}</title></head><body><p>{sentence}</p></body></html>")
    assert text == sentence and title == sentence


def test_a_title_of_a_megabyte_is_cut_and_a_long_block_equal_to_it_stays_text():
    body = articles(1, size=3)[0]
    huge = "A title that goes on " + "and on " * 150_000
    page = (f"<html><head><title>{huge}</title></head><body>" + "<h1>x</h1>" * 1000
            + f"<p>{huge}</p>" + "".join(f"<p>{p}</p>" for p in body) + "</body></html>")
    text, title = article(page)
    assert title == "x" and len(text) > len(huge) - 10 and all(p in text for p in body)
    text, title = article(page.replace("<h1>x</h1>", ""))
    assert title == " ".join(huge.split())[:MAX_TITLE_CHARS] and len(title) == MAX_TITLE_CHARS
    assert text.startswith("A title that goes on")  # a block too long to be a headline is the article's


CODE = ["def read(path):\n    with open(path) as f:\n        for line in f:\n            print(line)",
        "int main() {\n  return 0;\n}",
        "try {\n  run();\n} catch (e) {\n  log(e);\n}"]


def test_a_code_listing_is_one_block_with_its_lines_and_indentation_in_a_figure_or_not():
    # a <pre> split at every line lost its indentation and made each "}" a paragraph of its own (the gopher
    # rules' duplicate paragraphs, paragraph dedup and the template step then cut lines out of the code); and
    # resiliparse drops a <figure>'s text with alt_texts=False, where doc sites put their listings
    body = articles(1, size=2)[0]
    page = _page(f"<article><h1>Reading files</h1><p>{body[0]}</p>"
                 f"<pre><code>\n{CODE[0]}\n</code></pre>"
                 f"<figure><pre>{CODE[1]}</pre><figcaption>A C program that does nothing</figcaption></figure>"
                 f'<FIGURE class="highlight"><pre><code>{CODE[2]}\n\n  \n</code></pre></FIGURE>'
                 f"<p>{body[1]}</p></article>")
    text, title = article(page)
    assert title == "Reading files" and text.split("\n\n") == [body[0], *CODE, body[1]]


# headings whose ids, made from their text, say what resiliparse's pass takes for a section's role (a blog on
# fitness trackers, 2025: "Fitness tracker trends in 2026" went)
HEADINGS_WITH_IDS = ["Fitness tracker trends in 2026", "Popular destinations this winter", "Featured speakers"]


@pytest.mark.parametrize("sections", [1, 300])
def test_a_heading_stays_whatever_its_id_says(sections):
    body = articles(1, size=4)[0]
    html = "".join(f'<h2 id="{"-".join(heading.lower().split())}">{heading}</h2><p>{body[k % len(body)]}</p>'
                   for k in range(sections) for heading in HEADINGS_WITH_IDS)
    text = main_text(_page(f"<article>{html}</article>"))
    assert all(text.count(heading) == sections for heading in HEADINGS_WITH_IDS)


# a page laid out in wrappers marked as layout (role=presentation: no role of its own), which resiliparse's pass
# drops with all they hold: every other paragraph of the article here, so that what is left is not so little of the
# page that the whole page is read instead
@pytest.mark.parametrize("copies", [1, 200])
def test_an_article_in_layout_wrappers_is_kept(copies):
    body = articles(1, size=6)[0]
    html = "".join(f'<p>{p}</p>' if k % 2 == 0 else f'<div role="presentation" class="column"><p>{p}</p></div>'
                   for k, p in enumerate(body * copies))
    text = main_text(_page(f"<main><h1>This week</h1>{html}</main>"))
    assert all(text.count(p) == copies for p in body)


# an FAQ whose questions say that their answers are shut (aria-expanded=false on the question itself, a heading or a
# div acting as a button), which resiliparse's pass takes for the question being shut
@pytest.mark.parametrize("copies", [1, 300])
def test_a_question_that_says_its_answer_is_shut_is_kept(copies):
    body = articles(1, size=4)[0]
    faq = "".join(f'<div class="faq-item"><h3 class="faq-question" aria-expanded="false">{question}</h3>'
                  f'<div class="faq-answer"><p>{answer}</p></div></div>'
                  f'<div role="button" aria-expanded="false" tabindex="0">{question.replace("?", " again?")}</div>'
                  f'<p>{answer}</p>' for question, answer in FAQ * copies)
    text = main_text(_page("<main>" + "".join(f"<p>{p}</p>" for p in body) + f"<h2>Questions</h2>{faq}</main>"))
    assert all(text.count(question) == copies == text.count(question.replace("?", " again?")) for question, _ in FAQ)
    assert all(p in text for p in body)


# how highlighters and editors end a listing's lines: with <br> (a blog's script, 2025: "python3import
# subprocess" came out), in CodeMirror's line elements each ending with <br/> (react.dev's examples), or both
LINE_ENDS = {"br": lambda lines: "<br>".join(lines),
             "codemirror": lambda lines: "".join(f'<div class="cm-line">{line}<br/></div>' for line in lines),
             "spans": lambda lines: "".join(f'<span class="line">{line}</span><br />' for line in lines)}


@pytest.mark.parametrize("lines", [1, 5000])
@pytest.mark.parametrize("ends", list(LINE_ENDS))
def test_a_listings_lines_ended_by_br_tags_stay_lines(ends, lines):
    code = [line.replace("<", "&lt;") for line in CODE[0].split("\n")] * lines
    body = articles(1, size=2)[0]
    text = main_text(_page(f"<main><p>{body[0]}</p><pre><code>{LINE_ENDS[ends](code)}</code></pre>"
                           f"<p>{body[1]}</p></main>"))
    assert text.split("\n\n") == [body[0], "\n".join([CODE[0]] * lines), body[1]]


def test_a_listing_indented_in_the_source_loses_the_common_indentation_and_its_blank_lines_and_ends_an_article():
    # one listing is one block: its blank lines would be paragraph breaks in the text; and a listing of lines
    # after the last paragraph is the article's, as a list's items are (a line of text there is the page's tail)
    listing = "        first();\n\n        if (x) {\n            second();\n        }\n"
    text = main_text(_page(f"<main><p>{articles(1, size=1)[0][0]}</p><pre>{listing}</pre><p>Back to top</p></main>"))
    assert text.split("\n\n")[1:] == ["first();\nif (x) {\n    second();\n}"]


def test_figure_tags_become_div_tags_of_the_same_length_and_nothing_else_does():
    page = b'<figure class="a"><FIGURE>x</Figure ></figure><figures><figcaption>c</figcaption><fig'
    assert _fixed_tags(page)[0] == (b'<div    class="a"><div   >x</div    ></div   ><figures><figcaption>c'
                                    b'</figcaption><fig')


def test_a_headings_permalink_sign_goes_and_other_in_page_links_stay():
    # Sphinx and MkDocs put a "¶" link after each heading, Node.js's docs a "#", rustdoc a "§", Docusaurus a
    # zero-width space: signs, not text, on every heading of every doc site
    body = articles(1, size=4)[0]
    headings = ['Install<a class="headerlink" href="#install" title="Permalink to this heading">¶</a>',
                'From source<a class="headerlink" href="#from-source">&para;</a>',
                '<span><a class="mark" href="#fs_api" id="fs_api">#</a></span> Usage',
                '<a href="#method.read" class="anchor">§</a>Reading',
                'Options<a href="#options" class="hash-link" aria-label="Direct link to Options">\u200b</a>']
    page = _page("<main><h1>Manual</h1>" + "".join(
        f"<h2>{heading}</h2><p>{p}</p>" for heading, p in zip(headings, [*body, body[0]]))
        + '<p>See the note <a href="#fn1">[1]</a> and <a href="#options">the options</a>, then run it.</p></main>')
    blocks = main_text(page).split("\n\n")
    assert blocks[:10:2] == ["Install", "From source", "Usage", "Reading", "Options"]
    assert blocks[-1] == "See the note [1] and the options, then run it."


def test_a_heading_that_links_to_itself_is_a_heading_and_a_table_of_contents_still_goes():
    # mdBook (the Rust book), Hugo and Jekyll themes wrap each heading in a link to its own anchor: all link
    # text, it was taken for navigation and every heading of those sites went
    body = articles(1, size=3)[0]
    toc = "".join(f'<li><a href="#part-{i}">Part {i} of the guide</a></li>' for i in range(3))
    page = _page(f'<main><h1 class="menu-title">The Guide</h1><ul class="toc">{toc}</ul>' + "".join(
        f'<h2 id="part-{i}"><a class="header" href="#part-{i}">Part {i} of the guide</a></h2><p>{p}</p>'
        for i, p in enumerate(body)) + "</main>")
    assert main_text(page).split("\n\n") == [x for i, p in enumerate(body) for x in (f"Part {i} of the guide", p)]
