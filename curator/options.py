"""Flags shared by several commands, and the filter policy's flags, generated from the policy model."""

from __future__ import annotations

import inspect
from typing import Any, Optional

import typer

from common.errors import allowed_range


def warehouse_option() -> Any:
    return typer.Option(None, "--warehouse", metavar="FILE", help="the DuckDB warehouse (default: CURATE_WAREHOUSE, "
                        "else ./data/warehouse.duckdb)")


def sources_file_option() -> Any:
    return typer.Option(None, "--sources-file", metavar="FILE", help="the TOML file that declares sources without "
                        "code (default: CURATE_SOURCES_FILE, else sources.toml beside the warehouse)")


def json_option() -> Any:
    return typer.Option(False, "--json", help="print the result as one JSON object on stdout (messages on stderr)")


def bounds(model: Any, field: str) -> dict[str, Any]:
    """typer's `min` / `max` from a model field's closed bounds (`Settings`, a run context): the flag refuses what
    the model refuses, on every path, from one place. An open bound, which typer cannot say, is left to the model."""
    metadata = model.model_fields[field].metadata
    found = {k: getattr(m, k) for m in metadata for k in ("ge", "le") if getattr(m, k, None) is not None}
    return {"min": found.get("ge"), "max": found.get("le")}


# a policy key's `--no-<flag>` reads worse than these
_POLICY_OFF_FLAGS = {"require_order_agreement": "--allow-order-disagreement",
                     "require_score_agreement": "--allow-score-disagreement",
                     "exclude_contaminated": "--include-contaminated"}


def _policy_flag(key: str) -> inspect.Parameter:
    """The flag `--<key-with-dashes>` of a filter-policy key: the key's description with its range or choices and
    default as help; None unless given. Its value is checked by the policy itself, as a policy file's is."""
    from types import NoneType, UnionType
    from typing import Literal, Union, get_args, get_origin

    from tasks.curate.policy import FilterPolicy

    field = FilterPolicy.model_fields[key]
    kind = field.annotation
    if get_origin(kind) in (Union, UnionType):
        kind = next(a for a in get_args(kind) if a is not NoneType)
    flag, default = "--" + key.replace("_", "-"), field.default
    decls = [flag]
    if kind is bool:
        decls = [f"{flag}/{_POLICY_OFF_FLAGS.get(key, '--no-' + flag[2:])}"]
        said = f"default: {'on' if default else 'off'}"
    elif get_origin(kind) is Literal:
        kind, said = str, f"{' | '.join(get_args(kind))}; default {default}"
    else:
        said = "; ".join([allowed_range(FilterPolicy, key) or "any",
                          "default: none" if default is None else f"default {default}"])
    return inspect.Parameter(key, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Optional[kind],
                             default=typer.Option(None, *decls, help=f"{field.description} ({said})"))


def with_policy_flags(command):
    """One flag per filter-policy key, generated from the policy model, before the command's `warehouse`; the
    values reach the command's `**policy_flags` (None: not given)."""
    from tasks.curate.policy import FILE_ONLY_KEYS, FilterPolicy

    own = [p for p in inspect.signature(command).parameters.values() if p.kind is not p.VAR_KEYWORD]
    at = [p.name for p in own].index("warehouse")
    keys = [k for k in FilterPolicy.model_fields if k not in FILE_ONLY_KEYS]
    command.__signature__ = inspect.Signature([*own[:at], *map(_policy_flag, keys), *own[at:]])
    return command
