"""Reading raw rows in batches: local JSONL (tolerant, line by line), local Parquet (row group by row group),
and `datasets` streaming for Hub repositories (resumable, with back-off).

Local JSONL does not go through `datasets`: its JSON reader fails a whole block on one bad line without
naming it, and measured 8x slower than a line reader on 6 KB rows. A bad line here becomes an
`UnreadableRow` naming file and line; the rows around it are kept. Local Parquet does not either: `datasets`
stops at the first undecodable page, losing every row group after it. A damaged file (a cut or corrupt
gzip, a corrupt Parquet page) yields every row it can, then raises `SourceDamagedError` saying where.
"""

from __future__ import annotations

import gzip
import json
import logging
import re
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from common.errors import UserError
from common.reasons import ReadFault
from schemas.checks import MAX_DEPTH

log = logging.getLogger(__name__)


class SourceReadError(UserError, RuntimeError):
    """The input cannot be read at all (missing, truncated, not the format its name says)."""


class SourceDamagedError(SourceReadError):
    """Part of a file cannot be read (a cut or corrupt gzip stream, a corrupt Parquet page). Raised after every
    readable row was yielded; the message says where the damage is."""


@dataclass(slots=True)
class UnreadableRow:
    position: str
    reason: str  # quarantine reason: malformed_json, not_an_object, json_too_deep
    error: str
    text: str


@dataclass(slots=True)
class RawBatch:
    split: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    positions: list[str] = field(default_factory=list)
    unreadable: list[UnreadableRow] = field(default_factory=list)
    # Rows whose every nested value must be checked (lone surrogates, NaN, nesting): those a lenient
    # parser read, or with more brackets than the nesting allowed. Strict parsers vouch for the rest.
    deep_check: set[int] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.rows) + len(self.unreadable)


class _TooDeep(ValueError):
    pass


def _parse_line(line: bytes) -> tuple[Any, bool]:
    """(value, strict): orjson first; the standard library for what it refuses (lone surrogates, NaN),
    so that validation can name the field. Nesting past either parser's limit is `_TooDeep`."""
    try:
        return orjson.loads(line), True
    except orjson.JSONDecodeError as err:
        if "recursion" in str(err).lower():
            raise _TooDeep(str(err)) from None
    try:
        return json.loads(line), False
    except RecursionError:
        raise _TooDeep("nested deeper than the parser allows") from None


def _open_text(path: Path):
    # A 1 MiB buffer: with the default 8 KiB, iterating over 6 KB lines took most of the reading time
    # (measured 0.59 s -> 0.10 s for 775 MB, warm cache).
    return gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb", buffering=1 << 20)


_BOMS = {b"\xff\xfe\x00\x00": "UTF-32", b"\x00\x00\xfe\xff": "UTF-32", b"\xff\xfe": "UTF-16", b"\xfe\xff": "UTF-16"}


def _check_encoding(head: bytes, path: Path) -> None:
    """Refuse a file that is not UTF-8 (a UTF-16 export would otherwise lose rows as 'malformed')."""
    for bom, name in _BOMS.items():
        if head.startswith(bom):
            raise SourceReadError(f"{path}: the file is {name}-encoded; convert it to UTF-8 (e.g. iconv -f {name} -t UTF-8)")
    if len(head) >= 4 and head.count(b"\x00") * 3 >= len(head):
        raise SourceReadError(f"{path}: the file looks UTF-16-encoded (NUL bytes between characters); convert it to UTF-8")


# Every byte but "{" and "[": deleting them counts the opening brackets in one pass (two counts took twice as long).
_NOT_OPENING = bytes(b for b in range(256) if b not in b"{[")


def _row_of(obj: Any, strict: bool, text: bytes, position: str, batch: RawBatch) -> None:
    if isinstance(obj, dict):
        # A row with more brackets than the nesting limit may be nested too deep: walk it.
        if not strict or len(text.translate(None, _NOT_OPENING)) > MAX_DEPTH:
            batch.deep_check.add(len(batch.rows))
        batch.rows.append(obj)
        batch.positions.append(position)
    else:
        batch.unreadable.append(UnreadableRow(position, ReadFault.NOT_AN_OBJECT, type(obj).__name__, _shown(text)))


def _shown(text: bytes, limit: int = 100_000) -> str:
    return text[:limit].decode("utf-8", "replace").rstrip("\n")


def _head(f, size: int) -> bytes:
    """Up to `size` first bytes; fewer when the file is damaged within them (the line loop then reads up to the
    damage and reports it: a small gzip with garbage after it would otherwise lose every row)."""
    head = b""
    try:
        while len(head) < size and (chunk := f.read1(size - len(head))):
            head += chunk
    except (OSError, EOFError, zlib.error):
        pass
    return head


def read_jsonl(path: Path, batch_size: int, split: str = "train") -> Iterator[RawBatch]:
    """Rows of a JSON Lines file; a `.json` file holding one JSON array is read element by element."""
    batch = RawBatch(split)
    lineno = 0
    try:
        # Opened again after the head: a gzip reader that failed within it would not rewind on seek(0).
        with _open_text(path) as f:
            head = _head(f, 4096)
        _check_encoding(head, path)
        with _open_text(path) as f:
            if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[") and ".jsonl" not in [s.lower() for s in path.suffixes]:
                yield from _read_json_array(f.read(), path, batch_size, split)
                return
            for lineno, line in enumerate(f, start=1):
                if lineno == 1 and line.startswith(b"\xef\xbb\xbf"):
                    line = line[3:]  # a UTF-8 byte-order mark is not part of the first row
                if not line.strip():
                    continue
                position = f"{path.name}:{lineno}"
                try:
                    obj, strict = _parse_line(line)
                except _TooDeep as err:
                    batch.unreadable.append(UnreadableRow(position, ReadFault.JSON_TOO_DEEP, str(err), _shown(line)))
                except (ValueError, UnicodeDecodeError) as err:
                    batch.unreadable.append(UnreadableRow(position, ReadFault.MALFORMED_JSON, str(err), _shown(line)))
                else:
                    _row_of(obj, strict, line, position, batch)
                if len(batch) >= batch_size:
                    yield batch
                    batch = RawBatch(split)
    except (OSError, EOFError, zlib.error) as err:  # gzip.BadGzipFile is an OSError
        if len(batch):
            yield batch
        if path.suffix != ".gz":
            raise SourceReadError(f"{path}: cannot read past line {lineno}: {err}") from err
        raise SourceDamagedError(_gzip_damage_message(path, lineno, err)) from err
    if len(batch):
        yield batch


def _read_json_array(data: bytes, path: Path, batch_size: int, split: str) -> Iterator[RawBatch]:
    """The elements of a file that is one JSON array, as rows named `file.json[i]`."""
    try:
        items, strict = _parse_line(data)
    except (_TooDeep, ValueError, UnicodeDecodeError) as err:
        raise SourceReadError(f"{path}: starts with '[' but is not one valid JSON array ({err}); "
                              "give one JSON object per line (JSONL)") from None
    if not isinstance(items, list):
        raise SourceReadError(f"{path}: not a JSON array")
    batch = RawBatch(split)
    for i, obj in enumerate(items):
        text = orjson.dumps(obj) if strict else json.dumps(obj).encode("utf-8", "surrogatepass")
        _row_of(obj, strict, text, f"{path.name}[{i}]", batch)
        if len(batch) >= batch_size:
            yield batch
            batch = RawBatch(split)
    if len(batch):
        yield batch


@dataclass(frozen=True, slots=True)
class GzipDamage:
    offset: int  # compressed byte at which reading stops
    what: str
    altered: bool = False  # corrupt rather than cut: bytes before `offset` may have decoded to something else


def gzip_damage(path: Path, chunk: int = 1 << 16) -> GzipDamage | None:
    """Where and how a gzip file stops being readable, found by walking its members with zlib; None when it
    reads to the end. Only called once the streaming reader has failed, so it may read the file again."""
    size = path.stat().st_size
    pos, buf, member, eof = 0, b"", None, False  # pos: file offset of buf[0]; member: the open member's decompressor
    with path.open("rb") as f:
        while True:
            if len(buf) < 2 and not eof:
                more = f.read(chunk)
                eof, buf = not more, buf + more
            if not buf:
                break
            if member is None:
                if pos:  # zero padding after a member is allowed (gzip(1) and Python's gzip skip it)
                    stripped = buf.lstrip(b"\0")
                    pos, buf = pos + len(buf) - len(stripped), stripped
                    if len(buf) < 2 and not eof:
                        continue
                if buf[:2] != b"\x1f\x8b":
                    what = ("no gzip header: the file is not gzip-compressed" if pos == 0
                            else f"{size - pos:,} bytes that are not gzip follow the compressed data")
                    return GzipDamage(pos, what)
                member = zlib.decompressobj(31)
            before = member.copy()
            try:
                member.decompress(buf)
            except zlib.error as err:
                return _zlib_damage(err, _zlib_error_offset(before, buf, pos))
            if member.eof:
                pos, buf, member = pos + len(buf) - len(member.unused_data), member.unused_data, None
            else:
                pos, buf = pos + len(buf), b""
    if member is not None:
        return GzipDamage(size, "the gzip stream ends before its end marker: the file was cut short")
    return None


def _zlib_error_offset(decompressor, data: bytes, pos: int) -> int:
    """The file offset of the byte at which `decompressor` (a copy taken before `data`) fails."""
    for i in range(len(data)):
        try:
            decompressor.decompress(data[i : i + 1])
        except zlib.error:
            return pos + i
    return pos + len(data)


def _zlib_damage(err: zlib.error, offset: int) -> GzipDamage:
    text = str(err).split(": ", 1)[-1]
    if "incorrect data check" in text or "incorrect length check" in text:
        return GzipDamage(offset, f"a gzip member's checksum does not match its data: {text}", altered=True)
    if "header" in text:
        return GzipDamage(offset, f"a corrupt gzip header: {text}")
    # The decoder notices corruption some bytes after it starts: what it decoded just before may be altered.
    return GzipDamage(offset, f"corrupt compressed data: {text}", altered=True)


def _gzip_damage_message(path: Path, lineno: int, err: BaseException) -> str:
    damage = gzip_damage(path)
    if damage is None:  # the file reads to the end now: it changed while it was read
        return f"{path}: cannot read past line {lineno:,}: {err}"
    where = f"{damage.what} (compressed byte {damage.offset:,} of {path.stat().st_size:,})"
    if lineno == 0:
        return f"{path}: unreadable from the start: {where}"
    read = ("the lines before it were read, but the damage may have altered some of them" if damage.altered
            else "every complete line before it was read")
    return f"{path}: unreadable after line {lineno:,}: {where}; {read}"


def read_with_datasets(
    path: str,
    *,
    name: str | None = None,
    revision: str | None = None,
    data_files: str | None = None,
    splits: tuple[str, ...] = ("train",),
    batch_size: int,
    retries: int = 0,
    retry_wait: float = 1.0,
    label: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[RawBatch]:
    """Stream batches through `datasets.load_dataset(..., streaming=True)`: a Hub repo or a local file.

    A read that fails part-way (the Hub drops a connection) is resumed after the rows already yielded,
    with exponential back-off, up to `retries` times per split.
    """
    import datasets
    from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

    datasets.disable_progress_bars()
    label = label or path
    for split in splits:
        done = 0
        retrying = Retrying(
            stop=stop_after_attempt(retries + 1),
            wait=wait_exponential(multiplier=retry_wait),
            retry=retry_if_exception(_is_transient),
            sleep=sleep,
            reraise=True,
            before_sleep=lambda rs: log.warning(
                "read of %s [%s] failed after %d rows (%s); retrying", label, split, done, rs.outcome.exception()
            ),
        )
        try:
            for attempt in retrying:
                with attempt:
                    ds = datasets.load_dataset(
                        path, name, revision=revision, data_files=data_files, split=split, streaming=True
                    )
                    for cols in (ds.skip(done) if done else ds).iter(batch_size=batch_size):
                        keys = list(cols)
                        n = len(cols[keys[0]]) if keys else 0
                        rows = [{k: cols[k][i] for k in keys} for i in range(n)]
                        positions = [f"{label}[{split}][{done + i}]" for i in range(n)]
                        done += n
                        yield RawBatch(split, rows, positions)
        except Exception as err:
            raise SourceReadError(f"{label} [{split}] after {done} rows: {type(err).__name__}: {err}") from err


def _is_transient(err: BaseException) -> bool:
    """Worth retrying: not a wrong name or missing file, not bytes that are broken for good."""
    if not isinstance(err, Exception):  # GeneratorExit when the reader stops early, KeyboardInterrupt
        return False
    return not isinstance(err, (ValueError, FileNotFoundError)) and not _is_corrupt(err)


def _is_corrupt(err: Exception) -> bool:
    """Errors that say the data itself is broken (a truncated Parquet file): a retry reads the same bytes."""
    import pyarrow as pa

    text = str(err).lower()
    return isinstance(err, pa.ArrowInvalid) or "parquet" in text and ("magic" in text or "footer" in text or "corrupt" in text)


def read_folder(path: Path, config: str | None, splits: tuple[str, ...], batch_size: int) -> Iterator[RawBatch]:
    """A local folder in the Hub's dataset layout (a README.md card whose `configs` name the data files, as every
    version this project publishes is), read by `datasets` as it reads the same files from the Hub: `config` of
    it, its `splits` (none given: every split the config has)."""
    path = Path(path)
    if not path.is_dir():
        raise SourceReadError(f"{path}: no such folder")
    card_configs = folder_configs(path)
    if card_configs and config is not None and config not in card_configs:  # said before `datasets` is imported
        raise SourceReadError(f"{path}: not a dataset folder with config {config!r}: its card has "
                              f"{', '.join(card_configs)}")
    if not splits:
        import datasets

        try:
            splits = tuple(datasets.get_dataset_split_names(str(path), config))
        except Exception as err:
            raise SourceReadError(f"{path}: not a dataset folder with config {config!r}: "
                                  f"{type(err).__name__}: {err}") from err
    yield from read_with_datasets(str(path), name=config, splits=splits, batch_size=batch_size, label=str(path))


def folder_configs(path: Path) -> tuple[str, ...]:
    """The config names a folder's card (README.md's YAML front matter, `configs`) declares, read with
    huggingface_hub's card parser; () when it has no card or declares none (then `datasets` decides)."""
    from huggingface_hub.repocard import metadata_load

    card = Path(path) / "README.md"
    if not card.is_file():
        return ()
    try:
        meta = metadata_load(card) or {}
    except Exception:  # noqa: BLE001 - a card that does not parse is left to `datasets`, which says why
        return ()
    configs = meta.get("configs")
    if not isinstance(configs, list):
        return ()
    return tuple(str(c["config_name"]) for c in configs if isinstance(c, dict) and "config_name" in c)


def folder_revision(path: Path) -> str:
    """A folder's revision: a hash of every file's name and bytes (hidden ones, such as a `.cache`, left out),
    so the same folder read twice is the same revision and one changed file is a new one."""
    import hashlib

    root = Path(path)
    h = hashlib.blake2b(digest_size=10)
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = file.relative_to(root)
        if not any(part.startswith(".") for part in rel.parts):  # each file's own hash, as a file source's
            h.update(f"{rel.as_posix()}\0{_read_whole(file)[0]}\0".encode())
    return "folder:" + h.hexdigest()


def input_fault(path: Path) -> str | None:
    """Why a local source's path cannot be read (`no such file`; a symlink loop, a folder it may not enter: the
    system's reason; a FIFO, a device or a socket: not a regular file or folder), or None when it is a regular
    file or a folder."""
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as err:
        return f"cannot read it: {err.strerror or err}"
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "no regular file")
    return f"not a regular file or folder but {kind}: reading it could block or never end"


def read_path(path: Path, config: str | None, splits: tuple[str, ...], batch_size: int) -> Iterator[RawBatch]:
    """A local source: a folder in the Hub's layout (`read_folder`), else a file (`read_local`)."""
    if Path(path).is_dir():
        return read_folder(Path(path), config, splits, batch_size)
    return read_local(Path(path), batch_size)


def read_local(path: Path, batch_size: int) -> Iterator[RawBatch]:
    """A local JSONL (optionally .gz) or Parquet file, by its suffix."""
    path = Path(path)
    if (fault := input_fault(path)) is not None:
        raise SourceReadError(f"{path}: {fault}")
    suffixes = [s.lower() for s in path.suffixes]
    if ".parquet" in suffixes:
        yield from read_parquet(path, batch_size)
    elif ".jsonl" in suffixes or ".json" in suffixes:
        yield from read_jsonl(path, batch_size)
    else:
        raise SourceReadError(f"{path}: unknown format (expected .jsonl, .jsonl.gz or .parquet)")


def _open_parquet(path: Path):
    """The file with its footer read: fail early and clearly on a truncated or foreign file. Pages that carry a
    checksum are verified as they are read (free for files written without them)."""
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path, page_checksum_verification=True)
    except Exception as err:
        raise SourceReadError(f"{path}: not a readable Parquet file (truncated or corrupt?): {err}") from err


@dataclass(frozen=True, slots=True)
class LostRows:
    group: int
    first: int  # file row number of the first row not read
    count: int
    error: str


def read_parquet(path: Path, batch_size: int, split: str = "train") -> Iterator[RawBatch]:
    """A local Parquet file, row group by row group, as rows named `file[split][row]`. A group that cannot be
    decoded (a corrupt page) costs its own unread rows only: the other groups are read, then
    `SourceDamagedError` names the damaged groups and the rows lost."""
    import pyarrow as pa

    rows: list[dict[str, Any]] = []
    positions: list[str] = []  # carried with the rows: a batch may span a damaged group
    lost: list[LostRows] = []
    start = 0  # file row number of the current group's first row
    with _open_parquet(path) as pf:
        groups = pf.metadata.num_row_groups
        for g in range(groups):
            size, done = pf.metadata.row_group(g).num_rows, 0
            records = pf.iter_batches(batch_size=batch_size, row_groups=[g])
            while True:
                try:
                    record = next(records, None)
                    if record is None:
                        break
                    got = record.to_pylist()
                except (OSError, pa.ArrowException, UnicodeDecodeError) as err:
                    if done < size:
                        why = str(err).strip().rstrip(".") or type(err).__name__
                        lost.append(LostRows(g, start + done, size - done, why))
                    break
                rows += got
                positions += [f"{path.name}[{split}][{start + done + i}]" for i in range(len(got))]
                done += len(got)
                # Rows of several groups share a batch: a file of small groups does not make small batches.
                while len(rows) >= batch_size:
                    yield RawBatch(split, rows[:batch_size], positions[:batch_size])
                    del rows[:batch_size], positions[:batch_size]
            start += size
    if rows:
        yield RawBatch(split, rows, positions)
    if lost:
        raise SourceDamagedError(_parquet_damage_message(path, lost, groups, start))


def _parquet_damage_message(path: Path, lost: list[LostRows], groups: int, total: int) -> str:
    damaged = "; ".join(f"row group {x.group} is damaged, rows {x.first:,}-{x.first + x.count - 1:,} ({x.count:,}) "
                        f"were not read ({x.error})" for x in lost)
    read = total - sum(x.count for x in lost)
    return f"{path}: {damaged}; the other {read:,} of {total:,} rows were read (row groups 0-{groups - 1})"


def count_rows(path: Path) -> int | None:
    """Rows in a local file, cheaply, for a progress bar's total (None when unknown)."""
    path = Path(path)
    try:
        if path.is_dir():
            return None
        if ".parquet" in [s.lower() for s in path.suffixes]:
            import pyarrow.parquet as pq

            return pq.ParquetFile(path).metadata.num_rows
        if path.suffix == ".gz":
            return None
        return _read_whole(path)[1]
    except Exception:  # noqa: BLE001 - a progress total is a nicety
        return None


def file_revision(path: Path) -> str:
    """A local file's revision: a hash of its bytes, so the same file read twice is the same revision (a folder's:
    `folder_revision`)."""
    if Path(path).is_dir():
        return folder_revision(Path(path))
    return _read_whole(path)[0]


_WHOLE: dict[tuple[str, int, int], tuple[str, int]] = {}


def _read_whole(path: Path) -> tuple[str, int]:
    """(revision, newlines) of a file from one pass over its bytes, remembered while the file's size and
    modification time stay the same: `curate ingest` hashed a file to find whether there is work, hashed it
    again in its flow, then read it a third time to count rows for progress."""
    import hashlib

    st = Path(path).stat()
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)
    if key not in _WHOLE:
        h = hashlib.blake2b(digest_size=10)
        lines = 0
        with Path(path).open("rb") as f:
            while chunk := f.read(1 << 22):
                h.update(chunk)
                lines += chunk.count(b"\n")
        _WHOLE.clear()  # the last file only: a run reads one
        _WHOLE[key] = ("file:" + h.hexdigest(), lines)
    return _WHOLE[key]


def resolve_hub_revision(hub_id: str, revision: str) -> str:
    """The commit sha a Hub ref (branch, tag or sha) points at now."""
    if re.fullmatch(r"[0-9a-f]{40}", revision):
        return revision
    from huggingface_hub import HfApi

    try:
        return HfApi().dataset_info(hub_id, revision=revision).sha
    except Exception as err:
        raise SourceReadError(
            f"cannot resolve revision {revision!r} of {hub_id} on the Hub ({type(err).__name__}: {err}); "
            "offline, pass --path FILE (or --revision SHA with the dataset in the local cache)"
        ) from err


def read_source(
    hub_id: str,
    config: str | None,
    splits: tuple[str, ...],
    *,
    path: Path | None,
    revision: str,
    batch_size: int,
    retries: int,
    retry_wait: float,
) -> Iterator[RawBatch]:
    """Batches of a source: from a local file or folder when `path` is given, else from the Hub at `revision`."""
    if path is not None:
        return read_path(Path(path), config, splits, batch_size)
    return read_with_datasets(
        hub_id, name=config, revision=revision, splits=splits, batch_size=batch_size,
        retries=retries, retry_wait=retry_wait, label=hub_id,
    )


def limit_rows(batches: Iterator[RawBatch], limit: int | None) -> Iterator[RawBatch]:
    """The first `limit` rows (readable or not) of a stream of batches. The stream is not asked for a batch past
    the limit (one would be read for nothing, or meet damage the limit leaves out)."""
    if limit is not None and limit <= 0:
        return
    done = 0
    for batch in batches:
        if limit is not None and len(batch) > limit - done:
            take = limit - done
            batch = RawBatch(batch.split, batch.rows[:take], batch.positions[:take],
                             batch.unreadable[: max(0, take - len(batch.rows))],
                             {i for i in batch.deep_check if i < take})
        done += len(batch)
        yield batch
        if limit is not None and done >= limit:
            return
