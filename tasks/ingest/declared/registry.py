"""Which file declares sources, and the sources it declares (docs/sources.md#where-the-file-is-found): the file
`CURATE_SOURCES_FILE` names (or `--sources-file`), which must exist, else `sources.toml` beside the warehouse,
which may be absent (then no source is declared). The registry (`tasks.ingest.sources.get_source`) asks here for
a name it does not know as a built-in."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from itertools import chain
from pathlib import Path

from common.errors import NotFoundError
from common.settings import Settings, get_settings
from tasks.ingest.declared.declaration import read_declarations
from tasks.ingest.declared.model import AUTO, Declaration, DeclarationError, Format
from tasks.ingest.declared.source import DETECTED, Detect, declaration_of, declared_source, settle_format
from tasks.ingest.read import RawBatch
from tasks.ingest.sources.base import Source

SOURCES_FILE_NAME = "sources.toml"

_CACHE: dict[tuple, DeclaredSources] = {}


def formats() -> tuple[Mapping[str, Format], Detect]:
    """The formats by name, and the function that tells a format from a batch's columns
    (`tasks.ingest.declared.formats`)."""
    from tasks.ingest.declared.formats import FORMATS, detect_format

    return FORMATS, detect_format


def sources_file(settings: Settings | None = None) -> tuple[Path, bool]:
    """(the sources file, whether a setting named it). A named file must exist; the default may not."""
    settings = settings or get_settings()
    if settings.sources_file is not None:
        return Path(settings.sources_file), True
    return Path(settings.warehouse).parent / SOURCES_FILE_NAME, False


def declared_sources(settings: Settings | None, builtin: Collection[str]) -> Mapping[str, Source]:
    """The sources the settings' sources file declares, by name in the file's order ({} without a file); none may
    take a name of `builtin`. The file is read again only when it changed."""
    path, named = sources_file(settings)
    try:
        st = path.stat()
    except FileNotFoundError:
        if named:
            raise NotFoundError(f"{path}: no such file (the sources file CURATE_SOURCES_FILE or --sources-file "
                                "names)") from None
        return {}
    except OSError as err:  # a symlink loop, a folder it cannot enter: the file is there but cannot be read
        raise DeclarationError(f"{path}: cannot read the sources: {err.strerror or err}") from None
    known, detect = formats()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size, st.st_ino, id(known))
    if key not in _CACHE:
        decls = read_declarations(path, known, builtin=builtin)
        _CACHE.clear()  # one file at a time: a process reads one
        _CACHE[key] = DeclaredSources(decls, known)
    return _CACHE[key]


class DeclaredSources(Mapping[str, Source]):
    """The declared sources by name, in the file's order, each made a `Source` when first asked for: a command
    that reads one source of a file of hundreds builds that one (a `Source` builds its raw schema)."""

    def __init__(self, decls: Mapping[str, Declaration], known: Mapping[str, Format]):
        self._decls, self._known, self._built = dict(decls), known, {}

    def __getitem__(self, name: str) -> Source:
        if name not in self._built:
            d = self._decls[name]
            self._built[name] = declared_source(d, None if d.format == AUTO else self._known[d.format])
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._decls)

    def __len__(self) -> int:
        return len(self._decls)


def with_format_settled(source: Source, batches: Iterator[RawBatch]) -> tuple[Source, Iterator[RawBatch]]:
    """(the source with its format told, the same batches): a source declared `auto` has its format told from the
    first batch's columns, which is read here and handed on; any other source is returned as it is."""
    if declaration_of(source) is None or declaration_of(source).format != AUTO:
        return source, batches
    first = next(batches, None)
    if first is None:
        return source, iter(())
    return settled(source, first.rows), chain([first], batches)


def settled(source: Source, rows: list[dict]) -> Source:
    """`source` with its format told from `rows` (`tasks.ingest.declared.source.settle_format`)."""
    known, detect = formats()
    return settle_format(source, rows, known, detect)


def chosen_format(source: Source) -> dict[str, object]:
    """What an ingest summary says of a declared source's format: {"format": name, "format_detected": bool}; {}
    for a built-in source."""
    decl = declaration_of(source)
    if decl is None:
        return {}
    return {"format": decl.format, "format_detected": bool(source.extra.get(DETECTED))}


