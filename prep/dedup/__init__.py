"""Near-duplicate detection: shingles, MinHash signatures, LSH bands, survivors inside a cluster."""
