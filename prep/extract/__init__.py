"""From the raw web to documents: WARC records read as a stream, HTML decoded, its main text extracted."""
