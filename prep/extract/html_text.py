"""The main text of an HTML page: the article, not the page around it.

resiliparse parses the page (lexbor, in C) and drops what is never content: <nav>, <footer>, image captions, comment
sections and consent platforms' dialogs, and an <aside> or <form> unless it holds an article's worth of text. List
items become paragraphs first (resiliparse's main-content pass drops every list, taking it for a menu), <ruby>
readings go (the pass keeps the reading and drops the word), a character alone between two tags is kept (the pass
drops it: a kanji in its own element, a Chinese particle or a dash between two links, "5°"), and what the pass would
misread is made plain: an accordion's collapsed panels are shown (it drops what aria-hidden or display:none hides),
classes that say "can be opened" or name an embedded post, and headings' ids, are cleared (it reads them as hidden
elements, share buttons and sections of related links). The pass renders the rest as blocks, with the links marked,
and a listing's <br> tags as its line breaks. Block by block, a short block that is mostly link text is navigation
(menus, related links, tag lists), but not a reference list's names, each before its description; and a short block
that says what boilerplate says (newsletter, share buttons, related articles, copyright, cookie, photo credits,
dates and bylines, in English, German, French and Spanish) goes, unless the article's long blocks say the word too
(its subject: a post about newsletters); short blocks that are not prose go with their neighbours when those went (a
run between removed blocks, or the heading of a removed list: "Related posts", "Most read").

Where the page marks its article body the way content management systems do (`itemprop=articleBody`,
`entry-content`, `post-content`, ..., `<article>` last: the most specific mark found), that element alone
is read the same way (its blocks told apart within the page's one pass by a paragraph put at each of its
ends: a second pass over the body alone cost a fifth of the extraction), with the block right before it
(a headline or a standfirst), unless it holds little of the page's prose:
author boxes, related posts, teasers of other articles and comment sections around the article fall
outside. The text is then trimmed to the stretch from the article's title (the block before its first prose
block) to its last block of prose (a long line, or a sentence of eight words). A block among the first
three that the page names its title (its <title>, og:title or first <h1>, whole or as the headline within
"Headline | Site") is the headline: it comes out as the page's title, not as text, as trafilatura and
Zyte's article schema keep the two apart (html_article). Paragraphs, headings, list items and table rows
come out as blocks separated by blank lines, in Unicode NFC; a listing (<pre>) is one block that keeps its
lines and their indentation (a <figure>, where doc sites put listings, is read as a <div>).

Two second chances: when the main-content pass keeps a small share of the page's prose (it took the
article's wrapper for a sidebar, by a class such as "share" or "promoted"), the whole page goes
through the same block rules instead; and a page with no text but a <noscript> is read with it.

A hostile page costs little more than its size where that is cheap to ensure: a page nested deeper than
depth_limit skips the walks that cost the depth times the elements, thousands of <option> are renamed before
lexbor parses them in quadratic time, and the patterns over its bytes are bounded. Other shapes lexbor parses
in quadratic time (<a><b> repeated) are bounded by the job's time budget per page (prep/extract/page_worker.py;
docs/extract.md, "Hostile pages").

Measured against trafilatura, resiliparse alone and readability on trafilatura's own evaluation pages and on
Zyte's article-extraction benchmark (benchmarks/bench_extract.py; docs/extract.md).
"""

import html
import re
import textwrap
import unicodedata
from collections import Counter

import numpy as np
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from prep.extract.encoding import html_codec

# never the article: navigation, footers, image captions and credits, a comment form; nor, where the page has
# an article, its comment sections (by the ids and classes WordPress and Disqus give them: a substring such as
# "comment" also names many an article's wrapper)
CAPTION_CLASS = "[class*=caption i]"  # where a class of the element names a caption (_names_a_caption)
# the consent dialogs of the common consent platforms (OneTrust, CookieLawInfo, Complianz, Cookie Notice,
# CookieYes, Sourcepoint, Borlabs, iubenda, Quantcast, Cookiebot, Usercentrics, Didomi, TrustArc, Google's
# Funding Choices): a page's longest prose where the article is a teaser grid or a product (977 partners ...)
CONSENT_DIALOGS = ("#onetrust-consent-sdk, #cookie-law-info-bar, #cmplz-cookiebanner-container, .cmplz-cookiebanner, "
                   "#cookie-notice, .cky-consent-container, [id^=sp_message_container], #BorlabsCookieBox, "
                   "#iubenda-cs-banner, #qc-cmp2-container, #CybotCookiebotDialog, #usercentrics-root, #didomi-host, "
                   "#truste-consent-track, .fc-consent-root")
NEVER_CONTENT = f"nav, footer, figcaption, {CAPTION_CLASS}, #respond, {CONSENT_DIALOGS}"
# ... and any other dialog (a modal, or a banner marked as a dialog) that asks for consent to cookies
DIALOGS = "[role=dialog], [role=alertdialog], [aria-modal=true]"
ASKS_CONSENT = re.compile(r"cookie|consent|einwillig|zustimm|consentement|consentimiento")
COMMENT_SECTIONS = "#comments, .comments, .comment-list, .commentlist, #disqus_thread"
# a collapsed panel, by aria-hidden or an inline style (_show_panels: those that a control's aria-controls names)
HIDDEN = '[aria-hidden=true], [style*="display:none" i], [style*="display: none" i]'
# classes that resiliparse's pass drops an element for and that do not mean what it takes them to
# (_undo_misreadings): "collapsed" and "expandable" say an element can be opened, not that it is hidden (a
# layout's columns, an accordion's sections; "hidden" and "invisible" stay); a newsletter's post and a
# "follow-up" are not share and follow buttons; nor is an embedded post, a tweet the article quotes (EMBED_CLASS:
# "social-media-embed", "twitter-tweet"), where it holds the post as a <blockquote>, as Twitter's, Instagram's,
# Facebook's and Bluesky's embeds do (an "embedded-newsletter-signup" box holds none); and a heading's id, its
# anchor made from its text ("fitness-tracker-trends-in-2026", "popular-destinations"), says nothing of its role;
# nor do two attributes it drops an element for: role=presentation says the element has no role of its own (a
# layout's wrapper), and aria-expanded=false that the panel it controls is shut, not the element itself (an FAQ's
# question). MISREAD finds them all, and the controls that name collapsed panels, in one walk
MISREAD_CLASS = re.compile(r"(?:is-)?(?:collapsed|expandable)|newsletter-post|follow-up.*")
EMBED_CLASS = re.compile(r".*(?:embed|tweet).*")
EMBED_LEVELS = 3  # an embedded post's <blockquote> and the elements around it, this many in all
HEADINGS = frozenset(f"h{level}" for level in range(1, 7))
# (a <blockquote> is found by its tag, and the embed's classes from it: "[class*=embed]" reads every class)
MISREAD = ".collapsed, .expandable, .is-collapsed, .is-expandable, .newsletter-post, [class*=follow-up], " \
          "blockquote, [aria-controls], [role=presentation], [aria-expanded=false], " \
          + ", ".join(f"{tag}[id]" for tag in sorted(HEADINGS))
SOMETIMES_CONTENT = "aside, form"
CONTENT_INSIDE = 1000  # characters outside links that make an <aside> or <form> content (a post inside a form)
# where content management systems put the article, most specific first: the first found is read on its own
# (a page's <article> often holds teasers of other articles around its marked body)
ARTICLE_BODY = ('[itemprop="articleBody"]', '[class*="entry-content"]', '[class*="post-content"]',
                '[class*="article-body"]', '[class*="articleBody"]', '[class*="story-body"]', '[class*="post-body"]',
                '[class*="article-content"]', "article")
ARTICLE_BODY_SHARE = 0.3  # ... and replaces the page when it holds at least this share of the page's prose
TITLE_BLOCKS = 1  # blocks right before the first prose block that are kept (the article's title)
# the headline is the page's title, not its article's text (trafilatura and Zyte's schema keep it apart, and so
# does FineWeb's text): one of the text's first blocks that the page names its title (<title>, og:title,
# twitter:title, its first <h1>) comes out as the title, the text starting after it
HEADLINE_BLOCKS = 3  # ... looked for among the text's first blocks
HEADLINE_MIN_CHARS = 16  # ... and a block within a longer title ("Headline | Site") at least this long
MAX_TITLE_CHARS = 1000  # a longer block is not a headline, and a longer title the page gives is cut here (a
# hostile page's megabyte <title> would otherwise ride along in every document's metadata)
TITLE_META = 'meta[property="og:title"], meta[name="og:title"], meta[name="twitter:title"], ' \
             'meta[property="twitter:title"]'
WORDS = re.compile(r"\w+")
RESCUE_BELOW = 2000  # characters of prose under which the main-content pass is checked against the whole page
RESCUE_SHARE = 0.2  # ... and replaced by the whole page when it kept less than this share of the prose
THREAD_BELOW = 300  # characters of prose under which a page is read again with its comment sections (a forum)
THREAD_GAIN, THREAD_MIN = 2, 1000  # ... and taken where that holds this many times the prose, and this much
ZERO_WIDTH = re.compile("[\u200b\ufeff]")  # zero-width space and BOM: invisible, and they split words
LIST_TAGS = (b"li", b"ul", b"ol", b"dl", b"dt", b"dd")
# resiliparse drops a <figure>'s text with its images (alt_texts=False), where doc sites put their code listings:
# renamed to a <div> in the page's bytes (the same length; its <figcaption> still goes, NEVER_CONTENT)
FIGURE, FIGURE_RENAMED = b"figure", b"div   "
TITLE_NAME_ENDS = frozenset(b" \t\n\r\f>")  # "<title" then one of these (not "/") opens the page's title
NAME_ENDS = np.zeros(256, dtype=bool)  # bytes that end a tag's name (white space, "/", ">"): "<li" then any other
NAME_ENDS[np.frombuffer(b" \t\n\r\f/>", np.uint8)] = True  # byte is another tag: <link>, <lid>, <li-item>
# the tags, and the readings: the text after <rt> or <rp> up to the next tag (their end tags may be left out,
# and a reading running to the next </rt> took the article between; bounded, so that a hostile page of many
# unclosed tags costs no more than its length)
RUBY = re.compile(rb"</?ruby\b[^>]{0,1024}>|<(rt|rp)\b[^>]{0,1024}>[^<]{0,1024}(?:</\1\s*>)?", re.I)
# resiliparse's main-content pass drops a text between two tags that is three bytes in UTF-8, less white space: it
# means to drop an icon font's glyph (a private-use character), and its test reads the three bytes in the wrong
# order, which any such character passes, and an ASCII character before one of two bytes. So went a kanji in its
# own element under a reading, a Chinese word that is its own link ("<a>亲</a>"), a particle between two links
# ("</a>和<a>"), a quote closing after a link, a dash between two (" &mdash; ", and the two links' words ran
# together), "5°" in an element of its own: such a text (_dropped_alone) gets a private-use character after it in
# the page's bytes (as an entity, ASCII in any codec), and the text loses that again (_blocks, page_titles).
ALONE_KEPT = "\ue001"
ALONE_ENTITY = f"&#x{ord(ALONE_KEPT):X};".encode("ascii")
BULLETS = "\u2022\u2023\u2043"  # punctuation that separates links, not words
ALONE_MAX_BYTES = 12  # a text between two tags looked at, less white space: a character, or an entity ("&hellip;")
ALONE_SPACE = 2  # ... and the white space on either side looked past (" — " between two links; 96% of those on the
# tuning pages that are text, the rest on a line of their own, indented)
ASCII_SPACE = " \t\n\v\f\r"  # what the pass strips a text of
DOUBLE_BYTE_CODECS = frozenset(("gb18030", "gbk", "gb2312", "big5hkscs", "big5", "cp950", "cp932", "shift_jis",
                                "euc_jp", "cp949", "euc_kr"))
IS_SPACE = np.zeros(256, dtype=bool)
IS_SPACE[np.frombuffer(ASCII_SPACE.encode("ascii"), np.uint8)] = True
TEXT_ENDS = np.zeros(256, dtype=bool)  # how a text the pass drops can end: a byte over ASCII, an entity's ";"
TEXT_ENDS[0x80:] = TEXT_ENDS[ord(";")] = True
TEXT_ENDS_OR_SPACE = TEXT_ENDS | IS_SPACE
LINKED_BLOCK = 300  # a block shorter than this that is mostly links is navigation
PROSE_LINK_SHARE = 0.5  # ... but a sentence may link its source or a name (navigation is not sentences)
HEADING_RUN = 2  # short blocks, at most this many, right before a removed block are its heading ...
HEADING_CHARS = 60  # ... when each is shorter than this
MARK = "\ue000tokenmill article body\ue000"  # a private-use character: no page's text
# resiliparse's main-content pass takes the square of the depth (20,000 nested <div> 5.7 s, 4,000 0.23 s), and so
# does the text of each of nested <aside> (20,000: 3.2 s), where a page's elements are rarely 50 deep (a hostile
# or broken page can nest as deep as it has tags) ...
MAX_DEPTH = 4000
# ... and the pass costs the depth times the elements beneath (3,990 nested <div> over 20,000 <p>: 3.8 s): a page
# of many tags is read by the whole-page pass from DEPTH_TAG_BUDGET // tags deep (never less than MIN_DEPTH)
DEPTH_TAG_BUDGET = MAX_DEPTH * MAX_DEPTH
MIN_DEPTH = 100
# lexbor parses the options of a <select> in the square of their number (22,000: 1.7 s): past this many, they
# are renamed to an element the parser passes over (a select's text is never read: form fields are left out)
MAX_OPTIONS = 1000
TAG = re.compile(r"<[^>]+>")
LINK = re.compile(r"<a\b[^>]*>(.*?)</a>", re.S)
# a heading wrapped in a link to its own anchor (mdBook, Hugo and Jekyll themes): a heading, not navigation (a
# table of contents, a list of such links, still is)
SELF_LINKED_HEADING = re.compile(r'(<h[1-6]>)\s*<a href="#[^"]*">([^<]*)</a>')
# a heading's permalink: a link within the page whose text is a sign, not words (Sphinx's and MkDocs' "¶",
# Node.js docs' "#", rustdoc's "§", Docusaurus' zero-width space), on every heading of every doc site
PERMALINK = re.compile(r'<a\b[^>]*\bhref="#[^"]*"[^>]*>\s*(?:[¶#§⚓🔗\u200b]|&para;|&sect;|&#182;)?\s*</a>')
# a listing, as resiliparse renders a <pre> (its lines and their indentation kept): one block, not a block a line
PRE = re.compile(r"<pre\b[^>]*>(.*?)</pre>", re.S)
BLOCK = re.compile(r"</?(?:p|h[1-6]|li|ul|ol|pre|br|div|tr|table|blockquote)\b[^>]*>")
LINE_BREAK = re.compile(r"<br\b[^>]*>")  # a listing's lines: highlighters put each in an element ending with <br>
CJK = re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")  # kana, Han, Hangul
SENTENCE_ENDS = frozenset(".!?。！？…\"”»)")  # a block's last character other than white space
# the words of consent and legal notices (among the boilerplate words below, and apart: _topical)
LEGAL_WORDS = ("©", "copyright", r"\(c\)", "all rights reserved", "alle rechte", "cookie", "impressum", "datenschutz",
               "privacy")
# What boilerplate says, matched against the lowercased block (2.6x as fast as re.I): words found anywhere in it,
# and the words it starts with (matched at its start alone: a search would try them at every position; and some
# say boilerplate only there: "Mehr zu ...", "Plus d'infos", while "sich mehr zu bewegen", "plus d'un an" are prose)
BOILERPLATE_WORDS = (
    # related and recommended articles
    r"\brelated", "read more", "read also", "also like", "might like", "more stories", "more from", "top stories",
    "explore further", "weitere (artikel|beiträge|themen)", "mehr zum thema", "lesen sie auch", "auch interessieren",
    "weiterlesen", "meist gesucht", "aktuelle news", "plus d'articles", "à lire", "voir aussi", "vous aimerez",
    "à découvrir", "lea más", "leer más", "le puede interesar", "te puede interesar", "mir[aá] también",
    # subscribing, sharing, following, accounts, comments, donations; "share" and "app" as buttons and prompts say
    # them ("Share this", "Share:", "Get the app"), not as any word: articles say them as often as chrome does
    "newsletter", "subscri", "abonn", "inbox", "alerts", r"e-?mails?\b", r"\bteilen", "follow us", "folgen sie",
    r"\bshare( (this|on|via|it|with|the (post|article|blog))\b|[:.!]|$)", r"\bget the (\w+ ){0,3}app\b",
    "install this app", "home screen", "download", r"\blogin", "log in", "sign up", "sign in", "registrier",
    "einloggen", "anmelden", "kommentar", "kommentieren", r"\bcomments?\b", "réactions", r"\bspende", "donate",
    "support (us|our)", "únete", "sharing is caring", r"affiliate (and/or referral )?links?",
    # advertising, shops, legal
    r"\banzeige\b", "advertisement", r"\bwerbung", "continue reading", "zum shop", "jetzt entdecken", "entdecken sie",
    "ohne gewähr", *LEGAL_WORDS, "externer inhalt", "inhalt laden", "zu laden", "inhaltsverzeichnis",
    "table of contents",
    # authors, credits, dates, categories
    "über den autor", "über die autorin", "about the author", "à propos de l", "sobre el autor", "foto:", "bild:",
    "photo:", "image:", "credit:", "crédito", "istock", "getty", "shutterstock", "symbolbild", r"\bdpa\b",
    r"\bafp\b", "reuters", "kategorie", "categor", "veröffentlicht", "aktualisiert am", "opublikowano",
    # reading times ("5 min read", "Lesezeit: 4 Minuten")
    "min read", "minute read", "minutes read", "reading time", "read time", "lesezeit", "temps de lecture",
    "tiempo de lectura",
)
CLOCK = re.compile(r"\d{1,2}:\d{2} uhr")  # a time of day in German news, searched where "uhr" is
# ... but a word of those that the page's long prose blocks say in this many blocks or more is the article's
# subject, not its boilerplate ("newsletter", "subscribers", "download" in a post about them: a Substack post
# about its own newsletter lost every short paragraph that named it) ...
TOPICAL_BLOCKS = 3
# ... except the words of consent and legal notices, which a page's own cookie and privacy texts say at length
LEGAL = re.compile("|".join(LEGAL_WORDS))
# a consent notice is a few sentences, longer than the short blocks the words above are looked for in
CONSENT = re.compile(r"\b(uses?|use of|accept|allow|agree to|enable) (our |the )?cookies|cookie (policy|settings)")
CONSENT_BLOCK = 400


def _by_first_character(alternatives: tuple[str, ...]) -> re.Pattern:
    """One expression of the alternatives, grouped by their first character ("a(?:bonn|lerts|...)|b(?:...)"):
    Python's re tries every alternative at every position of the text, and a group whose first character is
    not there is ruled out at once (5x as fast as the plain alternation on the evaluation pages' short
    blocks). A `\\b` before the first letter becomes a look-behind after it; an escaped character stays one."""
    groups = {}
    for alternative in alternatives:
        if alternative.startswith("\\b"):
            first, rest = alternative[2], f"(?<=\\b{alternative[2]}){alternative[3:]}"
        elif alternative.startswith("\\"):
            first, rest = alternative[:2], alternative[2:]
        else:
            first, rest = alternative[0], alternative[1:]
        groups.setdefault(first, []).append(rest)
    return re.compile("|".join(f"{first}(?:{'|'.join(rests)})" for first, rests in groups.items()))


BOILERPLATE = _by_first_character(BOILERPLATE_WORDS)
BOILERPLATE_START = re.compile(
    r"ähnliche |advert|mehr zu|plus d'|von |by |foto|photo|bild|image|quelle|source|tags?:|posted|published|updated|"
    r"last updated|stand:")
# a short block that starts with a date is a dateline ("June 9, 2019", "09.06.2019", "Sonntag, 9. Juni 2019"),
# unless it is one of ITEM_RUN or more in a row: the items of a schedule or a timeline ("June 9 – Tampa, FL")
DATE_START = re.compile(
    r"\d{4}-\d{2}-\d{2}|\d{1,2}\.\s?\d{1,2}\.\s?\d{2,4}|\w+, \d{1,2}\. \w+ \d{4}|"
    r"(january|february|march|april|may|june|july|august|september|october|november|december"
    r"|(jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\.?) \d")
ITEM_RUN = 3  # blocks in a row that start with a date, or have the same punctuation, are a list's items ...
ITEM_CHARS = 120  # ... when shorter than this (a list's items are kept after the article's last paragraph)
PUNCTUATION_ONLY = re.compile(r"[\w\s]+")
TERM_RUN = 3  # linked names each followed by its description, this many pairs in a row, are a reference list ...
TERM_WORDS = 5  # ... where each name has at most this many words (a teaser of another article is a linked
#                 headline and its excerpt: more words) ...
DESCRIPTION_WORDS = 4  # ... and each description is a sentence of at least this many words, without links


def _text_outside_links(node) -> int:
    text = len(node.text)
    if text < CONTENT_INSIDE:
        return text
    # the links' text from the markup: a node object per link costs more than the page where a
    # whole-page ASP.NET <form> holds thousands of them
    return text - sum(len(TAG.sub("", link)) for link in LINK.findall(node.html))


def _drop_non_content(body, measure: bool = True, comments: bool = True) -> bool:
    """Removes the elements that are never the article (and, where `comments`, the comment sections), and (where
    `measure`: reading an element's text costs its depth in a page nested deep) the <aside> and <form> elements
    that do not hold CONTENT_INSIDE characters of text (some sites put the whole post in one) and the dialogs
    that ask for consent. Whether a comment section with text was removed."""
    # values(): a list made at once; iterating the collection itself costs ~90 µs a node in resiliparse 2
    for node in body.query_selector_all(NEVER_CONTENT).values():
        if node.parent is not None and (not node.matches(CAPTION_CLASS) or _names_a_caption(node.getattr("class"))):
            node.parent.remove_child(node)
    removed = False
    if comments:
        for node in body.query_selector_all(COMMENT_SECTIONS).values():
            if node.parent is not None:
                removed = removed or bool(node.text.strip())
                node.parent.remove_child(node)
    if not measure:
        return removed
    for node in body.query_selector_all(SOMETIMES_CONTENT).values():
        if node.parent is not None and _text_outside_links(node) < CONTENT_INSIDE:
            node.parent.remove_child(node)
    for node in body.query_selector_all(DIALOGS).values():
        if node.parent is not None and ASKS_CONSENT.search(node.text.lower()):
            node.parent.remove_child(node)
    return removed


def _names_a_caption(classes: str | None) -> bool:
    """Whether a class names a caption ("wp-caption", "imageCaption"), not a utility class that styles one:
    Tailwind's `[&_figcaption]:mt-xs` on an article's wrapper, or `caption-bottom` (a table's caption side)."""
    for token in (classes or "").split():
        utility = token.rsplit(":", 1)[-1].lower()
        if "caption" in utility and "[" not in token and utility not in ("caption-top", "caption-bottom"):
            return True
    return False


def _listing(text: str) -> str:
    """A <pre>'s text as one block: its lines without trailing white space, the blank ones left out (they would
    be paragraph breaks in the text), less the indentation they all share."""
    return textwrap.dedent("\n".join(line.rstrip() for line in text.split("\n") if line.strip()))


def _blocks(tree: HTMLTree, main_content: bool = True, noscript: bool = False) -> list[tuple[str, float]]:
    """(text, share of it in links) of each block (paragraph, heading, list item, table row, listing) of the
    page's main content (or of the whole page), in order."""
    marked = extract_plain_text(tree, preserve_formatting="minimal_html", main_content=main_content, comments=False,
                                links=True, alt_texts=False, form_fields=False, noscript=noscript, post_meta=False,
                                list_bullets=False)
    marked = SELF_LINKED_HEADING.sub(r"\1\2", PERMALINK.sub("", marked.replace(ALONE_KEPT, "")))
    blocks = []
    for at, part in enumerate(PRE.split(marked)):
        listing = at % 2 == 1  # a listing is one block; the text between splits at its block tags and lines
        for block in [part] if listing else (line for piece in BLOCK.split(part) for line in piece.split("\n")):
            linked = 0
            if "<" in block:  # most blocks hold no markup once the block tags are split off: no regex for them
                linked = sum(len(html.unescape(TAG.sub("", link))) for link in LINK.findall(block))
                block = TAG.sub("", LINE_BREAK.sub("\n", block) if listing else block)
            text = _listing(html.unescape(block)) if listing else html.unescape(block).strip()
            if text:
                blocks.append((text, linked / len(text)))
    return blocks


def _is_prose(text: str) -> bool:
    """A long line, or a sentence of eight words (of 16 characters in Chinese, Japanese or Korean, which
    put no spaces between words)."""
    if len(text) >= 80:
        return True
    if text.rstrip()[-1:] not in SENTENCE_ENDS:
        return False
    return len(text.split()) >= 8 or (len(text) >= 16 and CJK.search(text) is not None)


def _says_boilerplate(lowered: str, topical: frozenset[str] = frozenset()) -> bool:
    """Whether a lowercased block says what boilerplate says, other than the page's `topical` words."""
    if BOILERPLATE_START.match(lowered) is not None or ("uhr" in lowered and CLOCK.search(lowered) is not None):
        return True
    if not topical:
        return BOILERPLATE.search(lowered) is not None
    return any(found.group() not in topical for found in BOILERPLATE.finditer(lowered))


def _topical(removed: list[str], blocks: list[tuple[str, float]], short_block: int) -> frozenset[str]:
    """The boilerplate words that `removed` blocks say and the page's long prose blocks say too, in
    TOPICAL_BLOCKS blocks or more, as BOILERPLATE finds them (LEGAL words aside). A long block is searched
    only where it holds one of those words, and once: a search of every long block cost a tenth of the
    extraction, and one search per word up to twenty times the rest on a page of many such words."""
    said = {found.group() for text in removed if len(text) < short_block
            for found in BOILERPLATE.finditer(text.lower()) if LEGAL.match(found.group()) is None}
    if not said:
        return frozenset()
    counts = Counter()
    for text, _ in blocks:
        if len(text) >= short_block and _is_prose(text):
            lowered = text.lower()
            if any(word in lowered for word in said):
                counts.update(said.intersection(found.group() for found in BOILERPLATE.finditer(lowered)))
    return frozenset(word for word, count in counts.items() if count >= TOPICAL_BLOCKS)


def _in_runs(keys: list[str]) -> list[bool]:
    """Whether each block is in a run of ITEM_RUN or more in a row with the same key (not "")."""
    runs, i = [False] * len(keys), 0
    while i < len(keys):
        end = i + 1
        while end < len(keys) and keys[end] == keys[i]:
            end += 1
        if keys[i] and end - i >= ITEM_RUN:
            runs[i:end] = [True] * (end - i)
        i = end
    return runs


def _datelines(texts: list[str]) -> list[bool]:
    """Whether each block starts with a date and is not in a run of such blocks (a schedule, a timeline)."""
    dated = ["date" if DATE_START.match(text.lower()) else "" for text in texts]
    return [bool(date) and not run for date, run in zip(dated, _in_runs(dated))]


def _items(texts: list[str]) -> list[bool]:
    """Whether each block is an item of a list: in a run of short blocks that start with a date or have the same
    punctuation (tour dates, "England (Group A): 10th appearance")."""
    dated = _in_runs(["date" if DATE_START.match(text.lower()) else "" for text in texts])
    shaped = _in_runs([PUNCTUATION_ONLY.sub("", text) if len(text) < ITEM_CHARS else "" for text in texts])
    return [a or b for a, b in zip(dated, shaped)]


def _described_terms(blocks: list[tuple[str, float]], bad: list[bool], max_link_share: float) -> list[bool]:
    """Whether each removed block is a name in a reference list (MDN's properties and events, docs.rs' modules,
    a guide's steps): a short block of links (its own page's) right before its description, a sentence without
    links, in a run of TERM_RUN such pairs or more. A menu has no sentences between its links."""
    def pair(i: int) -> bool:
        (name, links), (description, described_links) = blocks[i], blocks[i + 1]
        return (bad[i] and not bad[i + 1] and links > max_link_share and len(name) < HEADING_CHARS
                and len(name.split()) <= TERM_WORDS and not _says_boilerplate(name.lower())
                and described_links <= max_link_share and description.rstrip()[-1:] in SENTENCE_ENDS
                and (len(description.split()) >= DESCRIPTION_WORDS or CJK.search(description) is not None))

    pairs = [pair(i) for i in range(len(blocks) - 1)] + [False]
    terms = [False] * len(blocks)
    for start, paired in enumerate(pairs):
        if paired and (start < 2 or not pairs[start - 2]):  # a run starts here: names at every other block
            end = start
            while end < len(blocks) and pairs[end]:
                end += 2
            if (end - start) // 2 >= TERM_RUN:
                terms[start:end:2] = [True] * ((end - start) // 2)
    return terms


def _removed(text: str, links: float, dateline: bool, max_link_share: float, short_block: int,
             topical: frozenset[str] = frozenset()) -> bool:
    """Whether a block is navigation or boilerplate: a short one mostly links (a sentence may hold up to
    PROSE_LINK_SHARE), a short one that says what boilerplate says (but the page's `topical` words) or is a
    dateline, a consent notice."""
    if len(text) < LINKED_BLOCK and links > max_link_share and (links > PROSE_LINK_SHARE or not _is_prose(text)):
        return True
    lowered = text.lower()
    if len(text) < short_block and (dateline or _says_boilerplate(lowered, topical)):
        return True
    return len(text) < CONSENT_BLOCK and "cookie" in lowered and CONSENT.search(lowered) is not None


def _kept(blocks: list[tuple[str, float]], max_link_share: float, short_block: int) -> list[str]:
    """The blocks that are not navigation or boilerplate, nor short blocks that go with them."""
    datelines = _datelines([text for text, _ in blocks])
    bad = [_removed(text, links, dateline, max_link_share, short_block)
           for (text, links), dateline in zip(blocks, datelines)]
    topical = _topical([text for gone, (text, _) in zip(bad, blocks) if gone], blocks, short_block)
    if topical:  # the removed blocks looked at again
        bad = [gone and _removed(text, links, dateline, max_link_share, short_block, topical)
               for gone, (text, links), dateline in zip(bad, blocks, datelines)]
    bad = [gone and not term for gone, term in zip(bad, _described_terms(blocks, bad, max_link_share))]
    short = [not gone and not _is_prose(text) for gone, (text, _) in zip(bad, blocks)]
    if all(gone or is_short for gone, is_short in zip(bad, short)):  # no prose to tell the article by
        return [text for gone, (text, _) in zip(bad, blocks) if not gone]
    kept, i = [], 0
    while i < len(blocks):
        if not short[i]:
            if not bad[i]:
                kept.append(blocks[i][0])
            i += 1
            continue
        end = i
        while end < len(blocks) and short[end]:
            end += 1
        run = [text for text, _ in blocks[i:end]]
        # a run between removed blocks (or the page's edges) goes with them, and so does the heading of a
        # removed block ("Related posts", "Most read"); a page of short blocks only is left as it is
        between = (i == 0 or bad[i - 1]) and (end == len(blocks) or bad[end]) and not (i == 0 and end == len(blocks))
        heading = (end < len(blocks) and bad[end] and len(run) <= HEADING_RUN
                   and all(len(text) < HEADING_CHARS for text in run))
        if not between and not heading:
            kept += run
        i = end
    return kept


def _prose_chars(blocks: list[str]) -> int:
    return sum(len(text) for text in blocks if _is_prose(text))


def depth_limit(tags: int) -> int:
    """How deep a page of `tags` tags may nest before the whole-page pass reads it (MAX_DEPTH, fewer for a page
    of more than MAX_DEPTH tags, down to MIN_DEPTH)."""
    return max(MIN_DEPTH, min(MAX_DEPTH, DEPTH_TAG_BUDGET // max(tags, 1)))


def _fixed_tags(page: bytes, codec: str = "utf-8") -> tuple[bytearray, int]:
    """The page's bytes as the parse should see them. Every list tag (<li>, </ul>, <DT ...>: LIST_TAGS in any case,
    the name ending there) is renamed to a paragraph's, "<p " and "</p ": resiliparse's main-content pass drops
    lists (it takes them for menus), and their items, as paragraphs, face the link-density and boilerplate rules
    like any other block. A <figure> becomes a <div> (FIGURE). More than MAX_OPTIONS <option> and <optgroup> tags
    become "x-tion" and "x-tgroup", which a <select> passes over. Where a tag's name starts "ru", <ruby> readings
    go: resiliparse drops a <ruby>'s base text and keeps its reading, the reverse of what is read. A short text
    alone between two tags that the pass would drop is kept (_characters_alone). One vectorized look at each
    "<", where a regular expression over the page's text cost a tenth of the extraction. The bytes are in
    `codec`: UTF-8, or any encoding where an ASCII byte is always its ASCII character. Returns the bytes and the
    number of "<" in them (at most the page's tags)."""
    copy = bytearray(page)
    data = np.frombuffer(copy, dtype=np.uint8)
    opens = np.flatnonzero(data[:-3] == ord("<"))
    names = opens + 1 + (data[opens + 1] == ord("/"))
    names = names[names < len(data) - 2]
    first, second = data[names] | 0x20, data[names + 1] | 0x20  # | 0x20: ASCII letters in lower case
    listed = np.zeros(len(names), dtype=bool)
    for tag in LIST_TAGS:
        listed |= (first == tag[0]) & (second == tag[1])
    markup = ~_in_title(copy, names)
    at = names[listed & markup & NAME_ENDS[data[names + 2]]]
    data[at], data[at + 1] = ord("p"), ord(" ")
    figures = names[(first == FIGURE[0]) & (second == FIGURE[1]) & markup & (names < len(data) - len(FIGURE))]
    figures = figures[NAME_ENDS[data[figures + len(FIGURE)]]]
    for k in range(2, len(FIGURE)):
        figures = figures[(data[figures + k] | 0x20) == FIGURE[k]]
    for k, byte in enumerate(FIGURE_RENAMED):
        data[figures + k] = byte
    options = names[(first == ord("o")) & (second == ord("p"))]
    if len(options) > MAX_OPTIONS:
        data[options], data[options + 1] = ord("x"), ord("-")
    tags = len(opens)
    if ((first == ord("r")) & (second == ord("u"))).any():
        copy = bytearray(RUBY.sub(b"", copy))  # the readings go, and the kanji under them stand alone
        data = np.frombuffer(copy, dtype=np.uint8)
        opens = np.flatnonzero(data[:-3] == ord("<"))
    return _characters_alone(copy, data, opens, codec), tags


def _in_title(page: bytearray, names: np.ndarray) -> np.ndarray:
    """Whether each tag's name (at `names`) is within the page's <title>, whose text is text, not markup: a page
    about HTML titled "The <li> element". The first <title> and its end, where both are found (an SVG drawing's
    <title/> closes itself, and comes after it), in lower or upper case."""
    start = _find(page, b"<title", 0)  # (near the page's start: a search stops there)
    if start < 0 or start + 7 > len(page) or page[start + 6] not in TITLE_NAME_ENDS:
        return np.zeros(len(names), dtype=bool)
    end = _find(page, b"</title", start)
    return (start < names) & (names < end) if end > 0 else np.zeros(len(names), dtype=bool)


def _find(page: bytearray, tag: bytes, start: int) -> int:
    """Where `tag` is in lower case after `start`, else in upper case, else -1."""
    found = page.find(tag, start)
    return found if found >= 0 else page.find(tag.upper(), start)


def _characters_alone(page: bytearray, data: np.ndarray, opens: np.ndarray, codec: str) -> bytearray:
    """The page with ALONE_ENTITY before the "<" that ends each text between two tags that resiliparse's
    main-content pass would drop and that is text (_dropped_alone): "亲", " — " and "&mdash;" between two links,
    "5°" in an element of its own. `data` is the page as an array and `opens` the positions of its "<"; the
    bytes are in `codec`, where "<" and ">" are never part of another character (UTF-8, the single-byte codecs
    and the double-byte codecs of Chinese, Japanese and Korean), so that a text between them decodes alone.
    Vectorized down to the few texts of a few bytes that end, before up to ALONE_SPACE bytes of white space, in
    a byte over ASCII or an entity's ";"."""
    ends = opens[np.searchsorted(opens, ALONE_SPACE + 1):]  # (sorted)
    if codec not in DOUBLE_BYTE_CODECS:  # (where a character's second byte may be any ASCII letter's, all of them)
        ends = ends[TEXT_ENDS_OR_SPACE[data[ends - 1]]]
    last = _past_space(data, ends - 1, -1)  # each text's last byte, less white space
    ending = TEXT_ENDS[data[last]]
    if codec in DOUBLE_BYTE_CODECS:  # a character's second byte may be an ASCII letter's, after one over ASCII
        ending |= data[last - 1] >= 0x81
    ends, last = ends[ending], last[ending]
    if not len(ends):
        return page
    # the ">" before each: the nearest in a window of the bytes before the text's last
    reach = ALONE_MAX_BYTES + ALONE_SPACE
    window = data[np.maximum(last[:, None] - np.arange(1, reach + 1), 0)] == ord(">")
    found = window.any(axis=1)
    starts = last - window.argmax(axis=1)  # the byte after the ">"
    if codec == "utf-8":  # three bytes, less white space, unless an entity
        found &= (last - _past_space(data, starts, 1) == 2) | (data[last] == ord(";"))
    at = [end for start, end in zip(starts[found].tolist(), ends[found].tolist())
          if _dropped_alone(html.unescape(str(page[start:end], codec, "replace")))]
    if not at:
        return page
    parts, start = [], 0
    for end in at:
        parts += (page[start:end], ALONE_ENTITY)
        start = end
    return bytearray(b"".join([*parts, page[start:]]))


def _past_space(data: np.ndarray, at: np.ndarray, step: int) -> np.ndarray:
    """Each position of `at` moved by `step` (1 or -1) past up to ALONE_SPACE bytes of white space (each at
    least that far from the page's edge it moves to, or a byte that is not white space before it)."""
    for _ in range(ALONE_SPACE):
        at = at + step * IS_SPACE[data[at]]
    return at


def _dropped_alone(text: str) -> bool:
    """Whether resiliparse's main-content pass drops this text between two tags, and it is text. The pass means
    to drop an icon font's glyph: a text of three UTF-8 bytes (less white space) from the private-use area. Its
    test reads the three bytes in the wrong order (little-endian, then the range 0x8080EE-0xBFA3EF), so that it
    drops three bytes whose last is 0x80-0xBF, all but a few at the range's two ends: almost any character of
    three bytes, or an ASCII one and one of two ("5°", "né"). Text is a letter or a digit,
    punctuation (a closing quote, a dash between two links, "。" after one) but a bullet, or a currency sign
    ("<span>€</span>"); not a private-use glyph, a zero-width space, or a broken sequence's replacement."""
    text = text.strip(ASCII_SPACE)
    encoded = text.encode("utf-8", "replace")
    if len(encoded) != 3 or not 0x8080EE <= int.from_bytes(encoded, "little") <= 0xBFA3EF:
        return False
    return any(character.isalnum() or unicodedata.category(character) == "Sc"
               or (unicodedata.category(character)[0] == "P" and character not in BULLETS) for character in text)


def _ascii_compatible(codec: str) -> bool:
    """Whether an ASCII byte of text in this codec is always its ASCII character (not so in UTF-16 and
    UTF-32, nor in the 7-bit encodings that shift into double bytes: ISO-2022, HZ, UTF-7)."""
    return not codec.replace("-", "_").lower().startswith(("utf_16", "utf_32", "utf_7", "iso2022", "hz"))


def _decoded(page: bytearray, codec: str) -> str:
    return str(page, codec, "replace").removeprefix("\ufeff")  # a byte order mark is not text


def _parsed(page: str, tags: int, comments: bool = True) -> tuple[HTMLTree, bool, bool]:
    """(A page with its tags fixed (_fixed_tags: `tags`, its count of "<"), parsed, what is never content dropped,
    and where `comments` its comment sections, what the main-content pass would misread made plain (collapsed
    panels, misread classes and heading ids: _undo_misreadings); whether its elements nest deeper than
    depth_limit(tags), where the walks that cost the depth times the elements are not taken: resiliparse's
    main-content pass, and the text of each of nested <aside> elements (which are kept for the block rules);
    whether a comment section with text was dropped). A page needs MAX_DEPTH tags to be that deep: the query
    runs on 4%, and costs at most the same product."""
    tree = HTMLTree.parse(page)
    if tree.body is None:
        return tree, False, False
    limit = depth_limit(tags)
    deep = tags > limit and tree.body.query_selector("*" + " > *" * limit) is not None
    dropped_comments = _drop_non_content(tree.body, measure=not deep, comments=comments)
    _undo_misreadings(tree.body)
    return tree, deep, dropped_comments


def _undo_misreadings(body) -> None:
    """What resiliparse's main-content pass would misread, made plain, in one walk of the page (each walk costs
    about as much whatever its selectors, and their union once): the classes MISREAD_CLASS matches taken off every
    element, those EMBED_CLASS matches off an embedded post (its <blockquote> and the elements around it,
    EMBED_LEVELS in all), the ids off headings, role=presentation and aria-expanded=false, and the panels that the
    page's controls name shown (_show_panels). After _drop_non_content, whose selectors read classes and ids of
    their own: a caption's class goes with its caption, a comment section's heading with its section."""
    controlled = set()
    for node in body.query_selector_all(MISREAD).values():
        controlled.update((node.getattr("aria-controls") or "").split())
        if node.tag in HEADINGS:
            node.delattr("id")
        if node.getattr("role") == "presentation":
            node.delattr("role")
        if node.getattr("aria-expanded") == "false":
            node.delattr("aria-expanded")
        _clear_classes(node, MISREAD_CLASS)
        for _ in range(EMBED_LEVELS if node.tag == "blockquote" else 0):  # an embedded post
            _clear_classes(node, EMBED_CLASS)
            node = node.parent
            if node is None or node.tag == "body":
                break
    if controlled:
        _show_panels(body, controlled)


def _clear_classes(node, names: re.Pattern) -> None:
    """Takes the classes that `names` matches whole off `node`."""
    classes = (node.getattr("class") or "").split()
    kept = [name for name in classes if names.fullmatch(name) is None]
    if len(kept) < len(classes):
        node.setattr("class", " ".join(kept))


def _show_panels(body, controlled: set[str]) -> None:
    """Shows the collapsed panels of accordions and tabs: the elements hidden by `aria-hidden=true` or an inline
    `display: none` whose id a control's `aria-controls` names (`controlled`: an FAQ's answers, each under its
    question's button; a guide's steps, several accordions giving theirs the same ids). resiliparse's
    main-content pass drops what either hides, and an accordion hides every panel but the first; other hidden
    elements stay hidden (a carousel's copies, a menu for small screens: showing every one lost more pages than
    it gained). The questions still go: the pass drops a <button>'s text, and making them text tipped the pass
    to take a page's FAQ for its article."""
    for panel in body.query_selector_all(HIDDEN).values():
        if panel.id in controlled:
            panel.delattr("aria-hidden")
            panel.delattr("style")  # the style only shapes the page, and this one hides the panel


def _article_body(body):
    """The page's article body by the most specific mark it has (ARTICLE_BODY, in order), or None."""
    for selector in ARTICLE_BODY:
        found = body.query_selector(selector)
        if found is not None:
            return found
    return None


def _with_lead(page_blocks: list[str], article: list[str]) -> list[str]:
    """The article body's blocks after the TITLE_BLOCKS that come right before it on the page (its headline, or
    a standfirst: more lead paragraphs, up to 2, lost on both evaluation sets)."""
    at = page_blocks.index(article[0]) if article and article[0] in page_blocks else 0
    return page_blocks[max(0, at - TITLE_BLOCKS):at] + article


def _marked(tree: HTMLTree, body) -> None:
    """Puts a MARK paragraph at the start and at the end of the article body, so that the page's main-content
    pass also tells which of its blocks are the body's: the same blocks as a pass over the body alone, but for
    22 of the 990 evaluation pages (F1 0.9233 against 0.9230; docs/benchmarks.md), at a fifth less time."""
    for add in (body.prepend, body.append):
        mark = tree.create_element("p")
        mark.text = MARK
        add(mark)


def _split(blocks: list[tuple[str, float]]) -> tuple[list[tuple[str, float]], list[tuple[str, float]] | None]:
    """(the page's blocks without the marks, the blocks between them or None where the pass dropped one)."""
    at = [i for i, (text, _) in enumerate(blocks) if text == MARK]
    page = [block for block in blocks if block[0] != MARK]
    if len(at) != 2:
        return page, None
    return page, blocks[at[0] + 1:at[1]]


def _words(text: str) -> str:
    return " ".join(WORDS.findall(text.lower()))


def page_titles(tree: HTMLTree) -> list[str]:
    """What the page names its title, most specific first: its og:title or twitter:title, its first <h1>,
    its <title>; white space collapsed, cut at MAX_TITLE_CHARS, the empty left out. One element of each kind
    (query_selector stops at the first: a page of a million <h1> costs no more)."""
    found = [tree.title or ""]
    if tree.body is not None:
        h1 = tree.body.query_selector("h1")
        found.insert(0, h1.text if h1 is not None else "")
    if tree.head is not None:
        meta = tree.head.query_selector(TITLE_META)
        found.insert(0, meta.getattr("content") or "" if meta is not None else "")
    found = (" ".join(title.replace(ALONE_KEPT, "").split()) for title in found)
    return [title[:MAX_TITLE_CHARS] for title in found if title]


def title_of(page: str) -> str:
    """The title a decoded page gives itself (the first of page_titles), or ""."""
    return next(iter(page_titles(HTMLTree.parse(page))), "")


def _headline(blocks: list[str], titles: list[str]) -> int | None:
    """The index of the first of the text's first HEADLINE_BLOCKS blocks that the page names its title (the
    whole of one, or a stretch of words within one, such as the headline of "Headline | Site"), or None; never
    the text's only block."""
    titles = [_words(title) for title in titles]
    for at, block in enumerate(blocks[:min(HEADLINE_BLOCKS, len(blocks) - 1)]):
        words = _words(block) if len(block) <= MAX_TITLE_CHARS else ""
        if words and any(words == title or (len(words) >= HEADLINE_MIN_CHARS and f" {words} " in f" {title} ")
                         for title in titles):
            return at
    return None


def main_text(page: str, max_link_share: float = 0.3, short_block: int = 120) -> str:
    """The main text of a decoded HTML page ("" when it has none)."""
    return article(page, max_link_share, short_block)[0]


def article(page: str, max_link_share: float = 0.3, short_block: int = 120) -> tuple[str, str]:
    """(the main text, its title: _main_text) of a decoded HTML page."""
    fixed, tags = _fixed_tags(page.encode("utf-8", "replace"))
    return _main_text(_decoded(fixed, "utf-8"), tags, max_link_share, short_block)


def html_main_text(body: bytes, declared: str | None = None, max_link_share: float = 0.3,
                   short_block: int = 120) -> tuple[str, str]:
    """(the main text, the codec that decoded the page) of an HTML page's bytes (html_article)."""
    text, _, codec = html_article(body, declared, max_link_share, short_block)
    return text, codec


def html_article(body: bytes, declared: str | None = None, max_link_share: float = 0.3,
                 short_block: int = 120) -> tuple[str, str, str]:
    """(the main text, its title, the codec that decoded the page) of an HTML page's bytes, decoded as
    decode_html decodes them. Where the codec allows, the list tags are renamed in the page's own bytes and
    the page is decoded once: a decoded page is encoded again to be renamed, and the two cost a tenth of the
    extraction."""
    codec = html_codec(body, declared)
    if not _ascii_compatible(codec):
        return *article(str(body, codec, "replace"), max_link_share, short_block), codec
    fixed, tags = _fixed_tags(body, codec)
    return *_main_text(_decoded(fixed, codec), tags, max_link_share, short_block), codec


def _main_text(page: str, tags: int, max_link_share: float, short_block: int) -> tuple[str, str]:
    """(the main text, its title) of a decoded page with its tags fixed (_fixed_tags: `tags`, its count of
    "<"). The title is the headline block taken out of the text (_headline), else the first of page_titles
    as the page gives it ("" where it has none)."""
    tree, deep, dropped_comments = _parsed(page, tags)
    if tree.body is None:
        return "", ""
    main_content = not deep  # else the whole-page pass
    body = _article_body(tree.body)
    if body is not None:
        _marked(tree, body)
    page_blocks, article_blocks = _split(_blocks(tree, main_content))
    text = _kept(page_blocks, max_link_share, short_block)
    prose = _prose_chars(text)
    # the main-content pass sometimes takes the article's wrapper for a sidebar (a class such as "share" or
    # "promoted" on it): the whole page's blocks are read, before the tree is cut to the article body below,
    # where that may be so (the page's raw text, a tenth of a pass, bounds the whole page's prose)
    whole = []
    if prose < RESCUE_BELOW and prose < RESCUE_SHARE * len(tree.body.text):
        whole = _kept(_split(_blocks(tree, main_content=False))[0], max_link_share, short_block)
    if body is not None:  # the article body alone: no author boxes, related posts or comments after it
        if article_blocks is None:  # the pass dropped a mark: the body is read on its own
            tree.body.replace_children(body)
            article_blocks = _split(_blocks(tree, main_content))[0]
        article = _kept(article_blocks, max_link_share, short_block)
        if _prose_chars(article) >= ARTICLE_BODY_SHARE * prose:
            text = _with_lead(text, article)
            prose = _prose_chars(text)
    if prose < RESCUE_BELOW and prose < RESCUE_SHARE * _prose_chars(whole):
        text = whole
    # a forum's thread is a comment section too: where the page has next to no prose without it (no article
    # that the comments are under), the whole page is read again with its comment sections (the main-content
    # pass drops them too), and taken where they hold a thread's prose
    if dropped_comments and _prose_chars(text) < THREAD_BELOW:
        thread = _kept(_split(_blocks(_parsed(page, tags, comments=False)[0], main_content=False))[0],
                       max_link_share, short_block)
        if _prose_chars(thread) >= max(THREAD_MIN, THREAD_GAIN * _prose_chars(text)):
            text = thread
    if not text and "<noscript" in page:  # pages that put their text only where scripts are off
        text = _kept(_blocks(_parsed(page, tags)[0], main_content, noscript=True), max_link_share, short_block)
    items = _items(text)
    # a listing of lines (the one kind of block that holds a line break) is the article's, as prose is
    starts = [i for i, block in enumerate(text) if _is_prose(block) or items[i] or "\n" in block]
    if starts:  # from the article's title to its last prose block (or list's item, or listing): the page's head
        # and tail fall outside
        text = text[max(0, starts[0] - TITLE_BLOCKS):starts[-1] + 1]
    titles = page_titles(tree)
    at = _headline(text, titles)
    title = text.pop(at) if at is not None else next(iter(titles), "")
    return tuple(unicodedata.normalize("NFC", ZERO_WIDTH.sub("", part)) for part in ("\n\n".join(text), title))
