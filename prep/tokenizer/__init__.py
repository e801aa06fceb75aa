"""The tokenizers: pre-tokenizer, specials, BPE, the hybrid's Unigram stage, training, report, encoding."""
