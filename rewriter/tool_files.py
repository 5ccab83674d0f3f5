"""Find the tool ``--tool`` names: one that ships, or one the user wrote in a file.

A tool file is a Python file defining one subclass of ``rewriter.api.Tool`` (the "where
and with what"). Its analysis routines are C beside it: the file of the same stem
(``mytool.py`` -> ``mytool.c``), or the files the class lists in ``analysis_files``,
relative to the tool file. The same file may also define ``class Analysis``, the
routines in Python for ``anvil rehost-server --lib mytool.py``::

    anvil instrument --tool ./mytool.py app.elf -o app.inst && anvil run app.inst
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType

from .api import Option, Tool
from .errors import AnvilError
from .passes import TOOLS


def is_tool_file(spec: str) -> bool:
    """True when ``spec`` names a tool file rather than a tool that ships."""
    return spec.endswith(".py") or "/" in spec


def load_tool(spec: str) -> Tool:
    """An instance of the tool ``spec`` names: a shipped tool's name or a tool file's path."""
    if not is_tool_file(spec):
        cls = TOOLS.get(spec)
        if cls is None:
            raise AnvilError(f"unknown tool '{spec}' (tools: {', '.join(sorted(TOOLS))}, or a tool file: ./mytool.py)")
        return cls()
    path = Path(spec)
    if not path.is_file():
        raise AnvilError(f"{spec}: no such tool file")
    cls = _tool_class(path)
    _check_class(spec, cls)
    try:
        tool = cls()
    except Exception as e:  # the user's code: one line, not a traceback
        raise AnvilError(f"{spec}: {cls.__name__}(): {type(e).__name__}: {e}") from None
    wanted = list(getattr(cls, "analysis_files", None) or [path.with_suffix(".c").name])
    sources = [(path.parent / name).resolve() for name in wanted]
    missing = [str(p) for p in sources if not p.is_file()]
    if missing:
        raise AnvilError(f"{spec}: the tool's analysis C file {missing[0]} is missing")
    tool.analysis_sources = sources
    tool.source_file = path.resolve()
    return tool


def _check_class(spec: str, cls: type[Tool]) -> None:
    """AnvilError naming what the tool class ``cls`` lacks of what Anvil calls or reads:
    found here, in one line, rather than as an exception inside Anvil when it is used
    (which would say it is Anvil's bug)."""
    def bad(problem: str) -> AnvilError:
        return AnvilError(f"{spec}: tool {cls.__name__} {problem}")

    if not (isinstance(cls.name, str) and cls.name.isidentifier()):
        raise bad('needs a name that is a C identifier (name = "mytool")')
    method = inspect.getattr_static(cls, "instrument")
    if method is Tool.__dict__["instrument"]:
        raise bad("defines no instrument(self, binary, opts) method")
    if not callable(method) or isinstance(method, (staticmethod, classmethod)):
        raise bad("has an instrument that is not a method: def instrument(self, binary, opts)")
    try:
        inspect.signature(method).bind(None, None, None)
    except TypeError:
        raise bad(f"has instrument{inspect.signature(method)}: it is called as instrument(self, binary, opts)") \
            from None
    if not (isinstance(cls.options, (list, tuple)) and all(isinstance(o, Option) for o in cls.options)):
        raise bad("has options that are not a list of rewriter.api.Option")
    files = getattr(cls, "analysis_files", None)
    if files is not None and not (isinstance(files, (list, tuple)) and all(isinstance(f, str) for f in files)):
        raise bad("has analysis_files that are not a list of file names")
    if not isinstance(cls.description, str):
        raise bad("has a description that is not a string")


def run_instrument(tool: Tool, binary: object, opts: object) -> None:
    """``tool.instrument(binary, opts)``, where an error of a tool file's own code is the
    user's, said in one line (AnvilError naming the file), not a bug of Anvil's: an
    exception raised in the tool file itself (the innermost frame of its traceback there),
    or an exit. An exception raised inside Anvil stays what it is (an internal error, or
    an AnvilError about the call)."""
    source = getattr(tool, "source_file", None)
    if source is None:  # a tool that ships: its faults are Anvil's
        tool.instrument(binary, opts)
        return
    try:
        tool.instrument(binary, opts)
    except AnvilError as e:  # a call the API refused: said with the line of the tool file that made it
        line = _line_in(e.__traceback__, source)
        if line is None:
            raise
        raise AnvilError(f"{source.name}: {type(tool).__name__}.instrument() (line {line}): {e}") from None
    except (Exception, SystemExit) as e:
        frame = e.__traceback__
        while frame is not None and frame.tb_next is not None:
            frame = frame.tb_next
        if not isinstance(e, SystemExit) and (frame is None or Path(frame.tb_frame.f_code.co_filename) != source):
            raise
        what = f"exit({e.code})" if isinstance(e, SystemExit) else f"{type(e).__name__}: {e}"
        line = f" (line {frame.tb_lineno})" if frame is not None and Path(frame.tb_frame.f_code.co_filename) == source \
            else ""
        raise AnvilError(f"{source.name}: {type(tool).__name__}.instrument(){line}: {what}") from None


def _line_in(tb: object, source: Path) -> int | None:
    """The line of the innermost frame of traceback ``tb`` that runs in the file ``source``."""
    line = None
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename) == source:  # type: ignore[attr-defined]
            line = tb.tb_lineno  # type: ignore[attr-defined]
        tb = tb.tb_next  # type: ignore[attr-defined]
    return line


def import_file(path: Path, prefix: str) -> ModuleType:
    """The Python file at ``path`` imported as a module of its own, named ``prefix`` and a
    digest of its path (a tool file here, a Python analysis in rehost/dispatch_py.py)."""
    name = prefix + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SystemExit as e:  # the file's own sys.exit() would end Anvil without a word
        raise ImportError(f"exit({e.code}) while it was imported") from None
    return module


def _tool_class(path: Path) -> type[Tool]:
    """The one Tool subclass the file at ``path`` defines."""
    try:
        module = import_file(path, "anvil_tool_")
    except Exception as e:  # the user's file: report any failure in one line
        raise AnvilError(f"{path}: {type(e).__name__}: {e}") from None
    found = [c for _, c in inspect.getmembers(module, inspect.isclass)
             if issubclass(c, Tool) and c is not Tool and c.__module__ == module.__name__]
    if len(found) != 1:
        what = "no" if not found else f"{len(found)} ({', '.join(c.__name__ for c in found)})"
        raise AnvilError(f"{path}: defines {what} subclasses of rewriter.api.Tool; a tool file defines one")
    return found[0]
