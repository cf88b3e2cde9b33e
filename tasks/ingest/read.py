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


def _parse_into(line: bytes, position: str, batch: RawBatch) -> None:
    """One line of JSON Lines into `batch`: a row, or an unreadable line saying why."""
    try:
        obj, strict = _parse_line(line)
    except _TooDeep as err:
        batch.unreadable.append(UnreadableRow(position, ReadFault.JSON_TOO_DEEP, str(err), _shown(line)))
    except (ValueError, UnicodeDecodeError) as err:
        batch.unreadable.append(UnreadableRow(position, ReadFault.MALFORMED_JSON, str(err), _shown(line)))
    else:
        _row_of(obj, strict, line, position, batch)


_KEPT_OF_TOO_LARGE = 4096  # the bytes of a row over the size limit kept in its quarantine record


def _lines(f, limit: int | None) -> Iterator[tuple[bytes, int | None]]:
    """(line, None) for each line of `f`; a line over `limit` bytes (its line ending aside) is (its first
    `_KEPT_OF_TOO_LARGE` bytes, its size), the rest of it read through in chunks and dropped, so that a line of
    hundreds of megabytes never sits in memory whole."""
    if limit is None:
        for line in f:
            yield line, None
        return
    while line := f.readline(limit + 2):  # the limit, and a line ending of up to 2 bytes
        if len(line.rstrip(b"\r\n")) <= limit:
            yield line, None
            continue
        kept, size = line[:_KEPT_OF_TOO_LARGE], len(line)
        while not line.endswith(b"\n") and (line := f.readline(1 << 20)):
            size += len(line)
        yield kept, size - (len(line) - len(line.rstrip(b"\r\n")) if line else 0)


def _too_large(position: str, size: int, limit: int | None, text: str) -> UnreadableRow:
    return UnreadableRow(position, ReadFault.ROW_TOO_LARGE.of(f"{limit:,}"), f"{size:,} bytes", text)


def read_jsonl(path: Path, batch_size: int, split: str = "train", max_row_bytes: int | None = None) -> Iterator[RawBatch]:
    """Rows of a JSON Lines file; a `.json` file holding one JSON array is read element by element. A row over
    `max_row_bytes` is an `UnreadableRow` (`row_too_large`), read through without being held whole."""
    batch = RawBatch(split)
    lineno = 0
    try:
        # Opened again after the head: a gzip reader that failed within it would not rewind on seek(0).
        with _open_text(path) as f:
            head = _head(f, 4096)
        _check_encoding(head, path)
        with _open_text(path) as f:
            if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[") and ".jsonl" not in [s.lower() for s in path.suffixes]:
                yield from _read_json_array(f.read(), path, batch_size, split, max_row_bytes)
                return
            for lineno, (line, size) in enumerate(_lines(f, max_row_bytes), start=1):
                if lineno == 1 and line.startswith(b"\xef\xbb\xbf"):
                    line = line[3:]  # a UTF-8 byte-order mark is not part of the first row
                position = f"{path.name}:{lineno}"
                if size is not None:  # over the limit: only its first bytes were read and kept
                    batch.unreadable.append(_too_large(position, size, max_row_bytes, _shown(line)))
                elif line.strip():
                    _parse_into(line, position, batch)
                else:
                    continue
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


def _read_json_array(data: bytes, path: Path, batch_size: int, split: str,
                     max_row_bytes: int | None = None) -> Iterator[RawBatch]:
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
        if max_row_bytes is not None and len(text) > max_row_bytes:
            batch.unreadable.append(_too_large(f"{path.name}[{i}]", len(text), max_row_bytes,
                                               _shown(text[:_KEPT_OF_TOO_LARGE])))
        else:
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
    data_files: str | dict[str, list[str]] | None = None,
    splits: tuple[str, ...] = ("train",),
    batch_size: int,
    retries: int = 0,
    retry_wait: float = 1.0,
    label: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
    max_row_bytes: int | None = None,
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
                        yield _sized(RawBatch(split, rows, positions), max_row_bytes)
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


def read_folder(path: Path, config: str | None, splits: tuple[str, ...], batch_size: int,
                max_row_bytes: int | None = None) -> Iterator[RawBatch]:
    """A local folder in the Hub's dataset layout (a README.md card whose `configs` name the data files, as every
    version this project publishes is): the files its card names for `config` and `splits` (none given: every split
    the config has), found inside the folder first (`folder_files`), then read by `datasets` as it reads the same
    files from the Hub."""
    path = Path(path)
    for split, files in folder_files(path, config, splits).items():
        kind = _data_kind(path, config, files)
        yield from read_with_datasets(kind, data_files={split: [str(f) for f in files]}, splits=(split,),
                                      batch_size=batch_size, label=str(path), max_row_bytes=max_row_bytes)


# what `datasets` reads a folder's data files with, by suffix (a compressed file by the suffix before .gz, ...)
_DATA_KINDS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv", ".arrow": "arrow"}


def _data_kind(path: Path, config: str | None, files: list[Path]) -> str:
    kinds = {_DATA_KINDS.get(next((s for s in reversed([x.lower() for x in f.suffixes]) if s in _DATA_KINDS), ""))
             for f in files}
    if len(kinds) != 1 or None in kinds:
        names = ", ".join(sorted({f.name for f in files})[:5])
        raise SourceReadError(f"{path}: config {config!r}: data files of one kind ({', '.join(sorted(_DATA_KINDS))}) "
                              f"a split, not {names}")
    return kinds.pop()


def _card_configs(path: Path) -> list[dict[str, Any]]:
    """The `configs` a folder's card (README.md's YAML front matter) declares, read with huggingface_hub's card
    parser; [] when it has no card, a card that does not parse, or declares none."""
    from huggingface_hub.repocard import metadata_load

    card = Path(path) / "README.md"
    if not card.is_file():
        return []
    try:
        meta = metadata_load(card) or {}
    except Exception:  # noqa: BLE001 - a card that does not parse declares nothing: the folder is refused as such
        return []
    configs = meta.get("configs")
    return [c for c in configs if isinstance(c, dict) and "config_name" in c] if isinstance(configs, list) else []


def folder_configs(path: Path) -> tuple[str, ...]:
    """The config names a folder's card declares (`_card_configs`), () when it declares none."""
    return tuple(str(c["config_name"]) for c in _card_configs(path))


def folder_files(path: Path, config: str | None, splits: tuple[str, ...]) -> dict[str, list[Path]]:
    """The files a folder's card names for `config` (None: its default config, or its only one), by split (`splits`,
    or every split the config has), each found inside the folder: a path of the card that is absolute, a URL, climbs
    out with `..`, or matches a file whose real path (links followed) is outside the folder is a `SourceReadError`
    naming the config and the path, before `datasets` is imported; so is a path that matches no file."""
    path = Path(path)
    if not path.is_dir():
        raise SourceReadError(f"{path}: no such folder")
    configs = _card_configs(path)
    if not configs:
        raise SourceReadError(f"{path}: not a dataset folder: no README.md card whose configs name its data files")
    names = [str(c["config_name"]) for c in configs]
    if config is None:
        chosen = [c for c in configs if c.get("default") is True] or (configs if len(configs) == 1 else [])
        if not chosen:
            raise SourceReadError(f"{path}: the card has several configs ({', '.join(names)}) and no default: name one "
                                  "(config = ...)")
        entry = chosen[0]
    elif config not in names:
        raise SourceReadError(f"{path}: not a dataset folder with config {config!r}: its card has {', '.join(names)}")
    else:
        entry = configs[names.index(config)]
    config = str(entry["config_name"])
    by_split = _card_data_files(path, config, entry.get("data_files"))
    missing = [s for s in splits if s not in by_split]
    if missing:
        raise SourceReadError(f"{path}: config {config!r} has no split {missing[0]!r}: its splits are "
                              f"{', '.join(by_split)}")
    root = path.resolve()
    return {split: _files_inside(path, root, config, by_split[split]) for split in (splits or tuple(by_split))}


def _card_data_files(path: Path, config: str, value: Any) -> dict[str, list[str]]:
    """A card config's `data_files`, in each form the Hub takes (a path, a list of paths: the train split; a list of
    {split, path}; a mapping split -> path or paths), as split -> patterns."""
    def patterns(v: Any) -> list[str]:
        if isinstance(v, str):
            return [v]
        if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
            return list(v)
        raise SourceReadError(f"{path}: config {config!r}: data_files holds {v!r}, not a path or a list of paths")

    if isinstance(value, str) or (isinstance(value, list) and all(isinstance(x, str) for x in value) and value):
        return {"train": patterns(value)}
    if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
        found: dict[str, list[str]] = {}
        for item in value:
            found.setdefault(str(item.get("split", "train")), []).extend(patterns(item.get("path")))
        return found
    if isinstance(value, dict) and value:
        return {str(k): patterns(v) for k, v in value.items()}
    raise SourceReadError(f"{path}: config {config!r}: the card names no data_files")


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")  # a URL (hf://, https:, file:, zip::...) or a drive (C:)


def _files_inside(path: Path, root: Path, config: str, patterns: list[str]) -> list[Path]:
    """The files `patterns` (globs relative to the folder) match, each a regular file whose real path is inside
    `root`; hidden files and folders (`.cache`) left out, as the revision leaves them."""
    files: list[Path] = []
    for pattern in patterns:
        parts = pattern.replace("\\", "/").split("/")
        if pattern.startswith(("/", "~")) or _SCHEME.match(pattern) or ".." in parts:
            raise SourceReadError(f"{path}: config {config!r} names {pattern!r}, outside the folder: a folder source "
                                  "reads only files inside it")
        matched = sorted(m for m in path.glob(pattern)
                         if not any(p.startswith(".") for p in m.relative_to(path).parts))
        for match in matched:
            try:
                real = match.resolve(strict=True)
            except (OSError, RuntimeError) as err:  # a link loop, a dangling link
                raise SourceReadError(f"{path}: config {config!r}: {match.relative_to(path)} cannot be read "
                                      f"({err})") from None
            if not real.is_relative_to(root):
                raise SourceReadError(f"{path}: config {config!r} names {pattern!r}, and "
                                      f"{match.relative_to(path)} links to {real}, outside the folder: a folder "
                                      "source reads only files inside it")
            if real.is_file() and match not in files:
                files.append(match)
        if not matched:
            raise SourceReadError(f"{path}: config {config!r} names {pattern!r}, which matches no file in the folder")
    return files


def folder_revision(path: Path, config: str | None = None, splits: tuple[str, ...] = ()) -> str:
    """A folder's revision: a hash of the files `folder_files` finds for `config` and `splits` (each split's name,
    then each file's name and bytes), exactly what a read of them reads: the same folder read twice is the same
    revision, and one changed file it reads is a new one."""
    import hashlib

    root = Path(path)
    h = hashlib.blake2b(digest_size=10)
    for split, files in folder_files(root, config, splits).items():
        h.update(f"{split}\0".encode())
        for file in files:  # each file's own hash, as a file source's
            h.update(f"{file.relative_to(root).as_posix()}\0{_read_whole(file)[0]}\0".encode())
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


def read_path(path: Path, config: str | None, splits: tuple[str, ...], batch_size: int,
              max_row_bytes: int | None = None) -> Iterator[RawBatch]:
    """A local source: a folder in the Hub's layout (`read_folder`), else a file (`read_local`)."""
    if Path(path).is_dir():
        return read_folder(Path(path), config, splits, batch_size, max_row_bytes)
    return read_local(Path(path), batch_size, max_row_bytes)


def read_local(path: Path, batch_size: int, max_row_bytes: int | None = None) -> Iterator[RawBatch]:
    """A local JSONL (optionally .gz) or Parquet file, by its suffix; a row over `max_row_bytes` is quarantined
    while it is read (`row_too_large`)."""
    path = Path(path)
    if (fault := input_fault(path)) is not None:
        raise SourceReadError(f"{path}: {fault}")
    suffixes = [s.lower() for s in path.suffixes]
    if ".parquet" in suffixes:
        yield from read_parquet(path, batch_size, max_row_bytes=max_row_bytes)
    elif ".jsonl" in suffixes or ".json" in suffixes:
        yield from read_jsonl(path, batch_size, max_row_bytes=max_row_bytes)
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


def _rows_over(record: Any, limit: int, offset: int = 0) -> dict[int, int]:
    """{row: its bytes} of the rows of an Arrow record batch over `limit` bytes, found by halving: a batch within
    the limit holds no such row (the whole batch's size is a read of its buffers' lengths)."""
    size = record.nbytes
    if size <= limit:
        return {}
    if len(record) == 1:
        return {offset: size}
    half = len(record) // 2
    return {**_rows_over(record.slice(0, half), limit, offset), **_rows_over(record.slice(half), limit, offset + half)}


def _arrow_preview(row: Any) -> str:
    """What a quarantine record keeps of a row too large to read: each column's type and size, and the first
    characters of each text column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = {}
    for name, column in zip(row.schema.names, row.columns):
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            parts[name] = pc.utf8_slice_codeunits(column, 0, 200).to_pylist()[0]
        else:
            parts[name] = f"<{column.type}, {column.nbytes:,} bytes>"
    return _shown(orjson.dumps(parts))


def _python_bytes(value: Any) -> int:
    """The bytes of a row's keys and values (UTF-8 texts, 8 a number)."""
    total, stack = 0, [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            total += len(v) if v.isascii() else len(v.encode("utf-8", "surrogatepass"))
        elif isinstance(v, bytes):
            total += len(v)
        elif isinstance(v, dict):
            stack += v.keys()
            stack += v.values()
        elif isinstance(v, list | tuple):
            stack += v
        else:
            total += 8
    return total


def _sized(batch: RawBatch, limit: int | None) -> RawBatch:
    """`batch` with each row over `limit` bytes moved to its unreadable rows (`row_too_large`), a preview kept."""
    if limit is None:
        return batch
    big = {i: n for i, row in enumerate(batch.rows) if (n := _python_bytes(row)) > limit}
    if not big:
        return batch
    preview = {i: {k: v[:200] if isinstance(v, str) else f"<{type(v).__name__}>" for k, v in batch.rows[i].items()}
               for i in big}
    return RawBatch(batch.split, [r for i, r in enumerate(batch.rows) if i not in big],
                    [p for i, p in enumerate(batch.positions) if i not in big],
                    batch.unreadable + [_too_large(batch.positions[i], n, limit, _shown(orjson.dumps(preview[i])))
                                        for i, n in big.items()])


@dataclass(frozen=True, slots=True)
class LostRows:
    group: int
    first: int  # file row number of the first row not read
    count: int
    error: str


def read_parquet(path: Path, batch_size: int, split: str = "train",
                 max_row_bytes: int | None = None) -> Iterator[RawBatch]:
    """A local Parquet file, row group by row group, as rows named `file[split][row]`. A group that cannot be
    decoded (a corrupt page) costs its own unread rows only: the other groups are read, then
    `SourceDamagedError` names the damaged groups and the rows lost. A row whose Arrow data is over `max_row_bytes`
    is an `UnreadableRow` (`row_too_large`), never made a Python value."""
    import pyarrow as pa

    rows: list[dict[str, Any]] = []
    positions: list[str] = []  # carried with the rows: a batch may span a damaged group
    unreadable: list[UnreadableRow] = []  # rows over `max_row_bytes`, left out of `rows`
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
                    big = _rows_over(record, max_row_bytes) if max_row_bytes is not None else {}
                    got = (record if not big else record.filter([i not in big for i in range(len(record))])).to_pylist()
                except (OSError, pa.ArrowException, UnicodeDecodeError) as err:
                    if done < size:
                        why = str(err).strip().rstrip(".") or type(err).__name__
                        lost.append(LostRows(g, start + done, size - done, why))
                    break
                named = [f"{path.name}[{split}][{start + done + i}]" for i in range(len(record))]
                rows += got
                positions += [p for i, p in enumerate(named) if i not in big]
                unreadable += [_too_large(named[i], n, max_row_bytes, _arrow_preview(record.slice(i, 1)))
                               for i, n in big.items()]
                done += len(record)
                # Rows of several groups share a batch: a file of small groups does not make small batches.
                while len(rows) + len(unreadable) >= batch_size:
                    yield RawBatch(split, rows[:batch_size], positions[:batch_size], unreadable)
                    del rows[:batch_size], positions[:batch_size]
                    unreadable = []
            start += size
    if rows or unreadable:
        yield RawBatch(split, rows, positions, unreadable)
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


def file_revision(path: Path, config: str | None = None, splits: tuple[str, ...] = ()) -> str:
    """A local file's revision: a hash of its bytes, so the same file read twice is the same revision (a folder's:
    `folder_revision`, of the files its card names for `config` and `splits`)."""
    if Path(path).is_dir():
        return folder_revision(Path(path), config, splits)
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
    max_row_bytes: int | None = None,
) -> Iterator[RawBatch]:
    """Batches of a source: from a local file or folder when `path` is given, else from the Hub at `revision`; a row
    over `max_row_bytes` is quarantined as it is read (`row_too_large`)."""
    if path is not None:
        return read_path(Path(path), config, splits, batch_size, max_row_bytes)
    return read_with_datasets(
        hub_id, name=config, revision=revision, splits=splits, batch_size=batch_size,
        retries=retries, retry_wait=retry_wait, label=hub_id, max_row_bytes=max_row_bytes,
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
