"""Quality and domain classifiers trained from the user's own labelled examples: fastText's supervised
model (words and word n-grams, Chinese and Japanese read a character a word), trained and scored by
tokenmill's own compiled code, written in fastText's .bin format."""
