"""The cleaning transform gives what it gave before it was made fast (tests/prep/clean_reference.py):
the same decision, language, score and output text for every document of the sample, the labelled
sets and the hostile set, under every profile."""

import pytest

from tests.prep.clean_reference import PROFILES, corpora, outcomes, read_reference

REFERENCE = read_reference()
CORPORA = corpora()


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_every_document_is_cleaned_as_the_reference_cleaned_it(corpus, profile):
    expected, texts = REFERENCE[f"{corpus}/{profile}"], CORPORA[corpus]
    got = outcomes(texts, profile)
    assert len(got) == len(expected)
    differ = [i for i, (a, b) in enumerate(zip(got, expected)) if a != b]
    assert not differ, (f"{len(differ)} of {len(texts)} differ; the first: document {differ[0]}, "
                        f"got {got[differ[0]]}, the reference {expected[differ[0]]}: {texts[differ[0]][:300]!r}")
