"""Check SHARDS/index.json against the shard files, or a mixture.json against its sources.

    python -m schemas.validate SHARDS [--quick]
    python -m schemas.validate OUT/shards/mixture.json [--quick]     (or OUT/shards, holding it)

Checks the index's keys and version, then each shard: present, size, checksum, readable Arrow with
the shard schema, row count, token counts, and every row (length a multiple of 128 and at most
seq_len, boundaries rising from 0 to the real tokens, padding only after them and equal to pad_id,
ids below vocab_size); then the totals. `--quick` skips the per-row checks. Prints every problem,
naming the shard, and exits 1 if there is any (0 when all is well). A mixture: its structure, then
every source as above, its rows and tokens against the source's index and its tokenizer and seq_len
against the first source's; every problem names the source.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas.index import INDEX_FILE, ShardEntry, ShardIndex, entry_count_problems, index_problems, read_index_json
from schemas.mixture import MIXTURE_FILE, SHARED_INDEX_KEYS, MixtureError, read_mixture_file
from schemas.shards import ROW_MULTIPLE, ShardFileError, open_shard
from schemas.trust import RepeatedKey, TooLarge, UntrustedPath, is_url, open_regular_file


def _rows_problems(table: pa.Table, index: ShardIndex) -> list[str]:
    problems = []
    tokens, cu = table.column("tokens").combine_chunks(), table.column("cu_seqlens").combine_chunks()
    token_offsets, cu_offsets = tokens.offsets.to_numpy(), cu.offsets.to_numpy()
    values, bounds = tokens.values.to_numpy(zero_copy_only=False), cu.values.to_numpy(zero_copy_only=False)
    lengths = np.diff(token_offsets)
    bad = np.flatnonzero((lengths % ROW_MULTIPLE != 0) | (lengths == 0) | (lengths > index.seq_len))
    if bad.size:
        problems.append(f"row {bad[0]} has {lengths[bad[0]]} tokens: not a multiple of {ROW_MULTIPLE} in "
                        f"(0, {index.seq_len}] ({len(bad)} rows like it)")
    if values.size and values.max() >= index.vocab_size:
        problems.append(f"token id {values.max()} is not below vocab_size {index.vocab_size}")
    for row in range(len(lengths)):
        b = bounds[cu_offsets[row]:cu_offsets[row + 1]]
        if len(b) < 2 or b[0] != 0 or np.any(np.diff(b) <= 0) or b[-1] > lengths[row]:
            problems.append(f"row {row}: cu_seqlens {b[:8].tolist()}... must rise from 0 to at most {lengths[row]}")
            break
        padding = values[token_offsets[row] + b[-1]:token_offsets[row + 1]]
        if np.any(padding != index.pad_id) or len(padding) >= ROW_MULTIPLE:
            problems.append(f"row {row}: {len(padding)} tokens after the last boundary, not all pad_id "
                            f"{index.pad_id} or 128 or more")
            break
    return problems


def shard_problems(folder: Path, entry: ShardEntry, index: ShardIndex, quick: bool) -> list[str]:
    try:
        table = open_shard(folder / entry.file, entry, index.checksum_algorithm)
    except ShardFileError as e:
        return [str(e)]
    problems = []
    tokens = int(pc.sum(pc.list_value_length(table.column("tokens"))).as_py() or 0)
    if tokens != entry.tokens:
        problems.append(f"{tokens} tokens, index says {entry.tokens}")
    real = sum(int(c[-1]) for c in table.column("cu_seqlens").to_pylist() if c)
    if real != entry.real_tokens:
        problems.append(f"{real} real tokens, index says {entry.real_tokens}")
    if entry.batch_rows is not None and list(entry.batch_rows) != [batch.num_rows for batch in table.to_batches()]:
        problems.append("batch_rows does not match the file's record batches")
    return problems + ([] if quick else _rows_problems(table, index))


def validate(folder: Path, quick: bool = False, notes: list[str] | None = None) -> list[str]:
    """Every problem found, each naming where; empty when the shards match their index (`notes`: what is
    worth saying of shards that do, an index of no shards)."""
    path = folder / INDEX_FILE
    try:
        with open_regular_file(path) as file:
            index = read_index_json(file)
    except FileNotFoundError:
        return [f"{path}: missing"]
    except (TooLarge, UntrustedPath, RepeatedKey) as e:
        return [f"{path}: {e}"]
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError, RecursionError) as e:
        return [f"{path}: not JSON: {e}"]
    if problems := index_problems(index, counts=False):
        return [f"{path}: {p}" for p in problems]
    typed, problems = ShardIndex.from_json(index, counts=False), []
    for entry, written in zip(typed.shards, index["shards"]):  # what the files hold first: it says more
        found = shard_problems(folder, entry, typed, quick) or entry_count_problems(written, typed.seq_len)
        problems += [f"{entry.file}: {p}" for p in found]
    totals = index["totals"]
    for key in ("rows", "tokens", "real_tokens", "bytes"):
        if key in totals and totals[key] != sum(e.get(key, 0) for e in index["shards"]):
            problems.append(f"{path}: totals.{key} {totals[key]} is not the sum over the shards")
    if totals["shards"] != len(index["shards"]):  # index_problems checked the keys are there
        problems.append(f"{path}: totals.shards {totals['shards']} does not count the {len(index['shards'])} shards")
    listed = {e.get("file") for e in index["shards"]}
    problems += [f"{p.name}: a shard file not in the index" for p in sorted(folder.glob("shard-*.arrow"))
                 if p.name not in listed]
    if not index["shards"] and not problems and notes is not None:  # the shards job's output of no documents
        notes.append(f"{path}: lists no shards (no document was packed): valid, but nothing a loader can train on")
    return problems


def validate_mixture(path: Path, quick: bool = False, unchecked: list[str] | None = None) -> list[str]:
    """Every problem of a mixture.json and its local sources, each naming the source; a source in a remote
    store is named in `unchecked` (validated where it is: as a path, its URL had named a local folder)."""
    try:
        mixture = read_mixture_file(path)
    except MixtureError as e:
        return [str(e)]
    problems, first = [], None
    for name, entry in mixture.sources.items():
        if is_url(location := mixture.location(path, name)):
            if unchecked is not None:
                unchecked.append(f"source {name!r} ({location}): in a remote store, not checked here")
            continue
        folder = Path(location)
        found = validate(folder, quick)
        problems += [f"source {name!r} ({entry.path}): {p}" for p in found]
        if found:
            continue
        with open_regular_file(folder / INDEX_FILE) as file:  # (validate read it a moment ago)
            index = ShardIndex.from_json(read_index_json(file))
        if not index.shards:  # valid alone (validate's note), but the loader refuses a mixture with it
            problems.append(f"source {name!r} ({entry.path}): its index lists no shards: a mixture's source needs "
                            f"rows to give")
            continue
        for key in ("rows", "tokens"):
            if getattr(entry, key) != getattr(index.totals, key):
                problems.append(f"source {name!r}: {key} {getattr(entry, key)} in {path.name}, its index says "
                                f"{getattr(index.totals, key)}")
        first = first or (name, index)
        for key in SHARED_INDEX_KEYS:
            if getattr(index, key) != getattr(first[1], key):
                problems.append(f"source {name!r}: {key} {getattr(index, key)!r} differs from source {first[0]!r}'s "
                                f"{getattr(first[1], key)!r} (a mixture has one tokenizer and seq_len)")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="schemas.validate", description=__doc__.split("\n")[0])
    parser.add_argument("shards", help="the folder holding index.json, or a mixture.json (or its folder)")
    parser.add_argument("--quick", action="store_true", help="skip the per-row checks")
    args = parser.parse_args(argv)
    path = Path(args.shards)
    if path.is_dir() and not (path / INDEX_FILE).exists() and (path / MIXTURE_FILE).exists():
        path = path / MIXTURE_FILE
    mixture, unchecked = path.suffix == ".json" and not path.is_dir(), []  # (a folder named web.json holds shards)
    problems = validate_mixture(path, args.quick, unchecked) if mixture else validate(path, args.quick, unchecked)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    for note in unchecked:
        print(f"note: {note}")
    if not problems:
        print(f"{args.shards}: {'the mixture, its sources and their shards' if mixture else 'index and shards'} agree"
              + (f" (but for the {len(unchecked)} sources in a remote store)" if unchecked and mixture else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
