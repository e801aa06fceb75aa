"""Reading input files: `--input` expanded to files, decompressed streams, records or quarantined lines."""
