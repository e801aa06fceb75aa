"""A page's line keys (one site's line, whatever its case and spacing) and its text with template lines cut."""

from prep.extract.templates import cut, line_keys, lines, site_key

PAGE = "Debian Notes\n\nThe package manager keeps a list.\n\n  \n\nSubscribe  to our NEWSLETTER\n\nLast line."


def test_a_line_has_one_key_on_its_site_whatever_its_case_and_spacing():
    keys = line_keys("docs.example.org", PAGE)
    assert len(keys) == len(lines(PAGE)) == 4  # the blank block is no line
    again = line_keys("docs.example.org", "subscribe to our\tnewsletter\n\nDEBIAN  notes")
    assert again == [keys[2], keys[0]]
    assert line_keys("blog.example.net", PAGE)[0] != keys[0]  # another site's line is another key
    assert len(set(keys)) == 4 and all(-(1 << 63) <= k < 1 << 63 for k in keys)  # signed 64-bit, for Arrow
    assert site_key("docs.example.org") == site_key("docs.example.org") != site_key("blog.example.net")


def test_only_the_template_lines_are_cut_in_their_order():
    keys = line_keys("docs.example.org", PAGE)
    text, removed = cut(PAGE, keys, {keys[0], keys[2]})
    assert text == "The package manager keeps a list.\n\nLast line."
    assert removed == [(keys[0], lines(PAGE)[0]), (keys[2], lines(PAGE)[2])]
    assert cut(PAGE, keys, {123}) == (PAGE, [])  # nothing cut: the text as it was, blank block and all
    assert cut(PAGE, keys, set(keys)) == ("", list(zip(keys, lines(PAGE))))
